/** `npm run gen:client`: writes the client's generated types (see gen-schema.ts). */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateSchema, SCHEMA_PATH } from './gen-schema.js';

const root = join(import.meta.dirname, '..', '..');
await writeFile(join(root, SCHEMA_PATH), await generateSchema());
process.stdout.write(`wrote ${SCHEMA_PATH}\n`);
