#!/usr/bin/env node
// The `spool` command. Spool is written in TypeScript and runs through tsx's loader.
// Telemetry starts first, so that the modules it instruments are hooked as they load.
import { register } from 'tsx/esm/api';

register();

/** The long-running commands and the service name their telemetry reports. */
function serviceName(args) {
  if (args[0] === 'dev') return 'spool';
  if (args[0] === 'agent') return 'spool-agent';
  if (args[0] === 'serve' && args[1]) return `spool-${args[1]}`;
  return undefined;
}

const name = serviceName(process.argv.slice(2));
if (name) {
  const { startTelemetry } = await import('../lib/telemetry.ts');
  await startTelemetry(process.env, name);
}
await import('../cli/main.ts');
