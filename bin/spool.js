#!/usr/bin/env node
// The `spool` command. Spool is written in TypeScript and runs through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
