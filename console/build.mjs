// Builds the console into console/dist; run by `npm ci` and `npm install` (the root package's
// `prepare` script). Vite is a dev dependency: an install without them (`npm ci --omit=dev`)
// skips the build with a notice instead of failing, and the gateway's /console/ then says how
// to build it.
import { fileURLToPath } from 'node:url';

let vite;
try {
  vite = await import('vite');
} catch {
  console.warn(
    'console: Vite is not installed (dev dependencies omitted?), so the console is not built; run `npm run build:console` after a full `npm ci`',
  );
  process.exit(0);
}
await vite.build({ root: fileURLToPath(new URL('.', import.meta.url)), logLevel: 'warn' });
