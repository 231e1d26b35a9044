/**
 * Diagnosis of a linked agent (DESIGN "Agent releases"): the replica holding a station's link
 * answers the NATS requests on `diagnose.<station>` by asking its agent and replying with the
 * agent's report, encoded, or with a `Spool-Error` header saying why there is none. A request
 * nobody holds a link for has no responders: the station is not linked.
 */
import { randomUUID } from 'node:crypto';
import { headers, type Msg, type Subscription } from '@nats-io/transport-node';
import { DiagnoseReport } from '../../gen/spool/v1/stations.js';
import { subjects } from '../../lib/bus.js';
import { MAX_DIAGNOSIS_LOG_LINES, trustedDiagnosis } from '../../lib/contracts/diagnosis.js';
import type { Logger } from '../../lib/logger.js';
import type { LinkDeps } from './link-deps.js';
import type { AgentOutbound } from './link-outbound.js';

/** How long the holder of a link waits for its agent's report. */
export const DIAGNOSE_WAIT_MS = 10_000;
/** The header of a reply that carries no report, with why. */
export const DIAGNOSE_ERROR_HEADER = 'Spool-Error';

/** What a diagnosis request on the bus carries. */
export interface DiagnoseBusRequest {
  log_lines: number;
}

interface Waiting {
  resolve: (report: DiagnoseReport | string) => void;
}

/** One link's diagnoses: the requests it takes from the bus and the reports its agent sends. */
export class LinkDiagnoses {
  readonly #deps: Pick<LinkDeps, 'nc' | 'diagnoseWaitMs'>;
  readonly #stationId: string;
  readonly #outbound: AgentOutbound;
  readonly #logger: Logger;
  readonly #waiting = new Map<string, Waiting>();
  #subscription: Subscription | undefined;

  constructor(options: {
    deps: Pick<LinkDeps, 'nc' | 'diagnoseWaitMs'>;
    stationId: string;
    outbound: AgentOutbound;
    logger: Logger;
  }) {
    this.#deps = options.deps;
    this.#stationId = options.stationId;
    this.#outbound = options.outbound;
    this.#logger = options.logger;
  }

  /** Takes the station's diagnosis requests from now on. */
  watch(): void {
    this.#subscription = this.#deps.nc.subscribe(subjects.diagnose(this.#stationId), {
      callback: (_err, msg) => void this.#answer(msg),
    });
  }

  async #answer(msg: Msg): Promise<void> {
    let lines = MAX_DIAGNOSIS_LOG_LINES;
    try {
      const asked = msg.json<DiagnoseBusRequest>().log_lines;
      if (Number.isInteger(asked) && asked >= 0 && asked <= MAX_DIAGNOSIS_LOG_LINES) lines = asked;
    } catch {
      // An unreadable request gets the default.
    }
    const requestId = randomUUID();
    const waitMs = this.#deps.diagnoseWaitMs ?? DIAGNOSE_WAIT_MS;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await new Promise<DiagnoseReport | string>((resolve) => {
      this.#waiting.set(requestId, { resolve });
      timer = setTimeout(
        () => resolve(`the agent did not answer within ${waitMs / 1000} s`),
        waitMs,
      );
      void this.#outbound.send({ diagnose: { requestId, logLines: lines } });
    });
    clearTimeout(timer);
    this.#waiting.delete(requestId);
    if (typeof outcome === 'string') {
      const h = headers();
      h.set(DIAGNOSE_ERROR_HEADER, outcome);
      msg.respond(new Uint8Array(), { headers: h });
    } else {
      msg.respond(DiagnoseReport.encode(outcome).finish());
    }
  }

  /** The agent's report: handed to the request waiting for it; one nobody waits for is dropped. */
  report(sent: DiagnoseReport): void {
    const waiting = this.#waiting.get(sent.requestId);
    if (!waiting) {
      this.#logger.debug(
        { request_id: sent.requestId.slice(0, 64) },
        'a diagnosis nobody waits for; dropped',
      );
      return;
    }
    waiting.resolve(trustedDiagnosis(sent));
  }

  /** The link ended: requests waiting are told so, and no more are taken. */
  stop(): void {
    this.#subscription?.unsubscribe();
    for (const waiting of this.#waiting.values()) {
      waiting.resolve("the station's link closed before its agent answered");
    }
  }
}
