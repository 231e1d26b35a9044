# syntax=docker/dockerfile:1
# One image for every Spool component: `spool serve gateway|accounts|jobs|stations|webhooks`,
# `spool migrate`, `spool admin …` and `spool agent …`. Spool runs its TypeScript through tsx (a
# runtime dependency; see bin/spool.js), so there is no compile step for it: the build stage installs
# the dependencies from the lock file, builds the console's web app, and prunes to production ones.
#
#   docker build -t registry.example.com/spool:0.1.0 .
#   docker run --rm registry.example.com/spool:0.1.0 --help

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The client is a workspace of the root package: npm ci needs its package.json to match the lock.
COPY client/package.json ./client/
# npm ci builds the console's web app into console/dist (the root package's `prepare` script runs
# Vite, a dev dependency); the runtime stage takes only the built files. The console reads the
# roles, the scopes and the event types from lib/ as the services do.
COPY console ./console
COPY lib/roles.ts ./lib/
COPY lib/contracts ./lib/contracts
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund \
  && npm cache clean --force

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# poppler's pdftoppm renders a PDF job's preview (GET …/jobs/{id}/preview) in the jobs service,
# and its pdfinfo counts a printed PDF's pages for usage.
RUN apt-get update \
  && apt-get install -y --no-install-recommends poppler-utils \
  && rm -rf /var/lib/apt/lists/*
# A fixed numeric user, so that Kubernetes can check runAsNonRoot (the chart runs as 10001 too).
RUN groupadd --system --gid 10001 spool \
  && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin spool
WORKDIR /app
# Everything stays owned by root and read-only to the spool user.
COPY --from=build /app/node_modules ./node_modules
COPY package.json tsconfig.json ./
COPY bin ./bin
COPY agent ./agent
COPY cli ./cli
COPY client ./client
COPY --from=build /app/console/dist ./console/dist
COPY gateway ./gateway
COPY gen ./gen
COPY lib ./lib
COPY services ./services
RUN ln -s /app/bin/spool.js /usr/local/bin/spool
USER 10001:10001
# tsx keeps its transform cache in the temporary directory (an emptyDir at /tmp in the chart).
ENV TMPDIR=/tmp
EXPOSE 8080 7070 50051
ENTRYPOINT ["node", "/app/bin/spool.js"]
CMD ["--help"]
