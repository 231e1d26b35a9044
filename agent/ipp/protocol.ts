/**
 * The IPP message encoding (RFC 8010): requests out, responses in, with the value types IPP
 * Everywhere printers and CUPS answer with (integers, booleans, enums, ranges, resolutions, dates,
 * strings and collections). Written by hand: the npm packages measured (`ipp` 2.0.1 logs to the
 * console on out-of-band values and reads a range and a set of two integers alike;
 * `ipp-encoder` 5 reads neither ranges nor collections) do not decode what a printer answers.
 */

/** Delimiter tags: the attribute group that follows. */
export const GROUP = {
  operation: 0x01,
  job: 0x02,
  end: 0x03,
  printer: 0x04,
  unsupported: 0x05,
  subscription: 0x06,
  eventNotification: 0x07,
} as const;

/** Value tags. */
export const TAG = {
  unsupported: 0x10,
  unknown: 0x12,
  noValue: 0x13,
  integer: 0x21,
  boolean: 0x22,
  enum: 0x23,
  octetString: 0x30,
  dateTime: 0x31,
  resolution: 0x32,
  rangeOfInteger: 0x33,
  begCollection: 0x34,
  textWithLanguage: 0x35,
  nameWithLanguage: 0x36,
  endCollection: 0x37,
  text: 0x41,
  name: 0x42,
  keyword: 0x44,
  uri: 0x45,
  charset: 0x47,
  naturalLanguage: 0x48,
  mimeMediaType: 0x49,
  memberAttrName: 0x4a,
} as const;

export const OPERATION = {
  printJob: 0x0002,
  validateJob: 0x0004,
  cancelJob: 0x0008,
  getJobAttributes: 0x0009,
  getPrinterAttributes: 0x000b,
  createPrinterSubscriptions: 0x0016,
  renewSubscription: 0x001a,
  cancelSubscription: 0x001b,
  getNotifications: 0x001c,
} as const;

/** `job-state` values. */
export const JOB_STATE = {
  pending: 3,
  held: 4,
  processing: 5,
  stopped: 6,
  canceled: 7,
  aborted: 8,
  completed: 9,
} as const;

/** `printer-state` values. */
export const PRINTER_STATE = { idle: 3, processing: 4, stopped: 5 } as const;

/** Status codes the agent acts on. */
export const STATUS = {
  /** `successful-ok-events-complete`: the subscription has ended; no more events will come. */
  eventsComplete: 0x0007,
  /** `client-error-not-found`: the job is gone (CUPS purged its history, say). */
  notFound: 0x0406,
  /** The first server error; below it, the request itself was at fault. */
  serverError: 0x0500,
  operationNotSupported: 0x0501,
  serviceUnavailable: 0x0502,
  busy: 0x0507,
  notAcceptingJobs: 0x0506,
} as const;

export interface Range {
  lower: number;
  upper: number;
}

export interface Resolution {
  x: number;
  y: number;
  units: 'dpi' | 'dpcm';
}

/** A collection: its members by name, each with its values. */
export type Collection = { [member: string]: Value[] };

export type Value = string | number | boolean | Date | Range | Resolution | Collection;

/** One attribute to encode: its value tag, name and values (several make a 1setOf). */
export interface Attribute {
  tag: number;
  name: string;
  values: Value[];
}

export interface Request {
  operation: number;
  requestId: number;
  groups: { tag: number; attributes: Attribute[] }[];
}

/** A decoded response: its status and, per group tag, the attributes by name. */
export interface Response {
  version: string;
  status: number;
  requestId: number;
  groups: { tag: number; attributes: Map<string, Value[]> }[];
}

export class IppError extends Error {
  readonly status: number | undefined;

  constructor(message: string, status?: number) {
    super(message);
    this.name = 'IppError';
    this.status = status;
  }
}

/** The operation attributes every request starts with, in the order RFC 8011 asks. */
export function operationAttributes(target: Attribute, ...more: Attribute[]): Attribute[] {
  return [
    { tag: TAG.charset, name: 'attributes-charset', values: ['utf-8'] },
    { tag: TAG.naturalLanguage, name: 'attributes-natural-language', values: ['en'] },
    target,
    ...more,
  ];
}

export function encodeRequest(request: Request): Buffer {
  const parts: Buffer[] = [];
  const header = Buffer.alloc(8);
  header.writeUInt8(2, 0); // IPP 2.0
  header.writeUInt8(0, 1);
  header.writeUInt16BE(request.operation, 2);
  header.writeUInt32BE(request.requestId, 4);
  parts.push(header);
  for (const group of request.groups) {
    parts.push(Buffer.from([group.tag]));
    for (const attribute of group.attributes) encodeAttribute(parts, attribute);
  }
  parts.push(Buffer.from([GROUP.end]));
  return Buffer.concat(parts);
}

function encodeAttribute(parts: Buffer[], { tag, name, values }: Attribute): void {
  values.forEach((value, i) => {
    const first = i === 0 ? name : '';
    if (tag === TAG.begCollection) {
      parts.push(field(TAG.begCollection, first, Buffer.alloc(0)));
      for (const [member, memberValues] of Object.entries(value as Collection)) {
        parts.push(field(TAG.memberAttrName, '', Buffer.from(member, 'utf8')));
        const memberTag = tagOf(memberValues[0]);
        encodeAttribute(parts, { tag: memberTag, name: '', values: memberValues });
      }
      parts.push(field(TAG.endCollection, '', Buffer.alloc(0)));
      return;
    }
    parts.push(field(tag, first, encodeValue(tag, value)));
  });
}

/** The tag a collection member's value is encoded with, from its JavaScript type. */
function tagOf(value: Value | undefined): number {
  if (typeof value === 'number') return TAG.integer;
  if (typeof value === 'boolean') return TAG.boolean;
  if (typeof value === 'object' && value !== null && !(value instanceof Date)) {
    if ('lower' in value) return TAG.rangeOfInteger;
    if (!('units' in value)) return TAG.begCollection;
  }
  return TAG.keyword;
}

function field(tag: number, name: string, value: Buffer): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  const out = Buffer.alloc(5 + nameBytes.length + value.length);
  out.writeUInt8(tag, 0);
  out.writeUInt16BE(nameBytes.length, 1);
  nameBytes.copy(out, 3);
  out.writeUInt16BE(value.length, 3 + nameBytes.length);
  value.copy(out, 5 + nameBytes.length);
  return out;
}

function encodeValue(tag: number, value: Value): Buffer {
  switch (tag) {
    case TAG.integer:
    case TAG.enum: {
      const b = Buffer.alloc(4);
      b.writeInt32BE(Number(value), 0);
      return b;
    }
    case TAG.boolean:
      return Buffer.from([value ? 1 : 0]);
    case TAG.rangeOfInteger: {
      const { lower, upper } = value as Range;
      const b = Buffer.alloc(8);
      b.writeInt32BE(lower, 0);
      b.writeInt32BE(upper, 4);
      return b;
    }
    default:
      if (typeof value !== 'string')
        throw new IppError(`cannot encode ${typeof value} as 0x${tag.toString(16)}`);
      return Buffer.from(value, 'utf8');
  }
}

/** Decodes a response. Throws {@link IppError} on a message cut short or malformed. */
export function decodeResponse(data: Buffer): Response {
  if (data.length < 9) throw new IppError('short IPP response');
  const reader = new Reader(data, 8);
  const groups: Response['groups'] = [];
  let group: Map<string, Value[]> | undefined;
  let current: Value[] | undefined;
  for (;;) {
    const tag = reader.byte();
    if (tag === GROUP.end) break;
    if (tag < 0x10) {
      group = new Map();
      groups.push({ tag, attributes: group });
      current = undefined;
      continue;
    }
    const { name, raw } = reader.field();
    if (!group) throw new IppError('IPP attribute outside a group');
    if (name !== '') {
      current = [];
      group.set(name, current);
    }
    const value = tag === TAG.begCollection ? reader.collection() : decodeValue(tag, raw);
    if (value !== undefined) current?.push(value);
  }
  return {
    version: `${data.readUInt8(0)}.${data.readUInt8(1)}`,
    status: data.readUInt16BE(2),
    requestId: data.readUInt32BE(4),
    groups,
  };
}

class Reader {
  readonly #data: Buffer;
  #pos: number;

  constructor(data: Buffer, pos: number) {
    this.#data = data;
    this.#pos = pos;
  }

  byte(): number {
    if (this.#pos >= this.#data.length) throw new IppError('truncated IPP response');
    const b = this.#data.readUInt8(this.#pos);
    this.#pos += 1;
    return b;
  }

  field(): { name: string; raw: Buffer } {
    const name = this.#bytes(this.#short()).toString('utf8');
    return { name, raw: this.#bytes(this.#short()) };
  }

  /** The members of a collection whose begCollection was just read, up to its endCollection. */
  collection(): Collection {
    const out: Collection = {};
    let member: Value[] | undefined;
    for (;;) {
      const tag = this.byte();
      const { raw } = this.field();
      if (tag === TAG.endCollection) return out;
      if (tag === TAG.memberAttrName) {
        member = [];
        out[raw.toString('utf8')] = member;
        continue;
      }
      const value = tag === TAG.begCollection ? this.collection() : decodeValue(tag, raw);
      if (value !== undefined) member?.push(value);
    }
  }

  #short(): number {
    if (this.#pos + 2 > this.#data.length) throw new IppError('truncated IPP response');
    const n = this.#data.readUInt16BE(this.#pos);
    this.#pos += 2;
    return n;
  }

  #bytes(n: number): Buffer {
    if (this.#pos + n > this.#data.length) throw new IppError('truncated IPP response');
    const out = this.#data.subarray(this.#pos, this.#pos + n);
    this.#pos += n;
    return out;
  }
}

/** A value by its tag; out-of-band values (unknown, no-value) and unknown tags carry nothing. */
function decodeValue(tag: number, raw: Buffer): Value | undefined {
  switch (tag) {
    case TAG.integer:
    case TAG.enum:
      return raw.length === 4 ? raw.readInt32BE(0) : undefined;
    case TAG.boolean:
      return raw.length === 1 ? raw.readUInt8(0) !== 0 : undefined;
    case TAG.rangeOfInteger:
      return raw.length === 8
        ? { lower: raw.readInt32BE(0), upper: raw.readInt32BE(4) }
        : undefined;
    case TAG.resolution:
      return raw.length === 9
        ? {
            x: raw.readInt32BE(0),
            y: raw.readInt32BE(4),
            units: raw.readUInt8(8) === 4 ? 'dpcm' : 'dpi',
          }
        : undefined;
    case TAG.dateTime:
      return raw.length === 11 ? decodeDate(raw) : undefined;
    case TAG.textWithLanguage:
    case TAG.nameWithLanguage: {
      // language length, language, text length, text
      if (raw.length < 4) return undefined;
      const langLength = raw.readUInt16BE(0);
      const at = 2 + langLength;
      if (at + 2 > raw.length) return undefined;
      return raw.toString('utf8', at + 2, at + 2 + raw.readUInt16BE(at));
    }
    default:
      if (tag >= 0x40 && tag <= 0x5f) return raw.toString('utf8');
      if (tag === TAG.octetString) return raw.toString('utf8');
      return undefined;
  }
}

/** RFC 2579 DateAndTime: year(2) month day hour minutes seconds deciseconds sign hours minutes. */
function decodeDate(raw: Buffer): Date {
  const utc = Date.UTC(
    raw.readUInt16BE(0),
    raw.readUInt8(2) - 1,
    raw.readUInt8(3),
    raw.readUInt8(4),
    raw.readUInt8(5),
    raw.readUInt8(6),
    raw.readUInt8(7) * 100,
  );
  const offsetMinutes =
    (raw.readUInt8(9) * 60 + raw.readUInt8(10)) * (raw.toString('latin1', 8, 9) === '-' ? -1 : 1);
  return new Date(utc - offsetMinutes * 60_000);
}

/** The first group of `tag` in a response, or an empty one. */
export function groupOf(response: Response, tag: number): Map<string, Value[]> {
  return response.groups.find((g) => g.tag === tag)?.attributes ?? new Map();
}

/** Every group of `tag` in a response, in order (a Get-Notifications answer has one per event). */
export function groupsOf(response: Response, tag: number): Map<string, Value[]>[] {
  return response.groups.filter((g) => g.tag === tag).map((g) => g.attributes);
}

/** Every attribute of a response, groups merged (a later group's attribute wins). */
export function allAttributes(response: Response): Map<string, Value[]> {
  const out = new Map<string, Value[]>();
  for (const group of response.groups) for (const [k, v] of group.attributes) out.set(k, v);
  return out;
}

/** The values of an attribute that are strings (keywords, names, text). */
export function strings(attributes: Map<string, Value[]>, name: string): string[] {
  return (attributes.get(name) ?? []).filter((v): v is string => typeof v === 'string');
}

/** The first value of an attribute if it is a number. */
export function integer(attributes: Map<string, Value[]>, name: string): number | undefined {
  const v = attributes.get(name)?.[0];
  return typeof v === 'number' ? v : undefined;
}

/** A status code as IPP names it where the agent knows the name, else in hex. */
export function statusName(status: number): string {
  const names: Record<number, string> = {
    1024: 'client-error-bad-request',
    1025: 'client-error-forbidden',
    1026: 'client-error-not-authenticated',
    1027: 'client-error-not-authorized',
    1028: 'client-error-not-possible',
    1030: 'client-error-not-found',
    1034: 'client-error-document-format-not-supported',
    1035: 'client-error-attributes-or-values-not-supported',
    1280: 'server-error-internal-error',
    1281: 'server-error-operation-not-supported',
    1282: 'server-error-service-unavailable',
    1286: 'server-error-not-accepting-jobs',
    1287: 'server-error-busy',
  };
  return names[status] ?? `0x${status.toString(16).padStart(4, '0')}`;
}
