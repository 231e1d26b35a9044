/**
 * The systemd unit `spool agent install-service` writes. The agent runs as a dynamic user with no
 * home, no way to gain privileges and a read-only view of the system, except its state directory
 * (`StateDirectory=spool-agent`, which systemd creates and hands over) and the folders of its
 * `file:` printers. The token file is handed over as a systemd credential, so it can stay readable
 * by root alone.
 */

import type { AgentFileConfig } from './config.js';
import { TOKEN_CREDENTIAL } from './config.js';
import { TOKEN_REFUSED_EXIT } from './errors.js';

export const DEFAULT_UNIT_PATH = '/etc/systemd/system/spool-agent.service';

export interface UnitOptions {
  /** The command that starts the agent, as absolute paths: `/opt/spool-agent/bin/spool-agent`. */
  exec: string[];
  /** The configuration file, passed with `--config`. */
  configPath: string;
  /** The checked configuration, for the token file and the `file:` printers' folders. */
  config?: AgentFileConfig;
  /** Run as this existing user instead of a dynamic one. */
  user?: string;
}

/** Quotes a word for an `ExecStart=` line when it needs it. */
function quote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : JSON.stringify(word);
}

/** The unit file's text. */
export function systemdUnit(options: UnitOptions): string {
  const { config } = options;
  const writable = [
    ...new Set(
      (config?.printers ?? []).flatMap((p) => (p.backend.kind === 'file' ? [p.backend.dir] : [])),
    ),
  ];
  const exec = [...options.exec, 'run', '--config', options.configPath].map(quote).join(' ');
  const lines = [
    '[Unit]',
    'Description=Spool station agent',
    'Wants=network-online.target',
    'After=network-online.target cups.service',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${exec}`,
    'Restart=always',
    'RestartSec=5',
    // A refused token: restarting cannot help; the agent waits, stopped, for the current one.
    `RestartPreventExitStatus=${TOKEN_REFUSED_EXIT}`,
    // Jobs printing get 10 s to finish after SIGTERM; leave room for the link to close.
    'TimeoutStopSec=30',
    'KillSignal=SIGTERM',
    ...(options.user === undefined ? ['DynamicUser=yes'] : [`User=${options.user}`]),
    'StateDirectory=spool-agent',
    'StateDirectoryMode=0700',
    ...(config?.tokenFile ? [`LoadCredential=${TOKEN_CREDENTIAL}:${config.tokenFile}`] : []),
    'NoNewPrivileges=yes',
    'CapabilityBoundingSet=',
    'AmbientCapabilities=',
    'ProtectSystem=strict',
    // A file: printer's folder under a home directory must stay reachable to be written.
    writable.some((dir) => /^\/(home|root|run\/user)(\/|$)/.test(dir))
      ? 'ProtectHome=read-only'
      : 'ProtectHome=yes',
    'PrivateTmp=yes',
    'PrivateDevices=yes',
    'DevicePolicy=closed',
    'PrivateMounts=yes',
    'ProtectProc=invisible',
    'ProtectKernelTunables=yes',
    'ProtectKernelModules=yes',
    'ProtectKernelLogs=yes',
    'ProtectControlGroups=yes',
    'ProtectClock=yes',
    'ProtectHostname=yes',
    'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6',
    'RestrictNamespaces=yes',
    'RestrictRealtime=yes',
    'RestrictSUIDSGID=yes',
    'LockPersonality=yes',
    'SystemCallArchitectures=native',
    'SystemCallFilter=@system-service',
    'SystemCallFilter=~@privileged',
    'SystemCallErrorNumber=EPERM',
    'UMask=0077',
    ...(writable.length > 0 ? [`ReadWritePaths=${writable.map(quote).join(' ')}`] : []),
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ];
  return lines.join('\n');
}
