/**
 * One open event stream: what it has sent, what it holds while missed events are replayed, and the
 * writes of its frames straight to the socket, corked for a turn of the event loop.
 */
import type { ServerResponse } from 'node:http';
import { chunkOf, type Frame, type Piece } from './event-frames.js';

/** One open stream. */
export class Listener {
  /** The highest sequence sent; nothing at or below it is sent again. */
  last: number;
  /** Live frames held while the missed ones are read, or undefined once live. */
  held: Frame[] | undefined;
  heldBytes = 0;
  closed = false;
  /** Writes are gathered until the end of the current turn of the event loop. */
  corked = false;
  /** Whether the body is chunked (HTTP/1.1) or ends with the connection (HTTP/1.0). */
  readonly chunked: boolean;

  constructor(
    readonly orgId: string,
    readonly res: ServerResponse,
    readonly types: ReadonlySet<string> | undefined,
    readonly bufferBytes: number,
    after: number,
    resuming: boolean,
    readonly onClose: (l: Listener) => void,
    readonly onCork: (l: Listener) => void,
    readonly allowed: (() => Promise<boolean>) | undefined,
  ) {
    this.last = after;
    this.held = resuming ? [] : undefined;
    this.chunked = res.chunkedEncoding;
    res.once('close', () => this.close());
  }

  wants(frame: Frame): boolean {
    return frame.seq > this.last && (!this.types || this.types.has(frame.type));
  }

  /** A live event: sent now, or held until the missed ones are out. */
  live(frame: Frame): void {
    if (this.closed || frame.seq <= this.last) return;
    if (this.held) {
      this.held.push(frame);
      this.heldBytes += frame.bytes.length;
      if (this.heldBytes > this.bufferBytes) this.close(true);
      return;
    }
    if (this.wants(frame)) this.send(frame);
  }

  send(frame: Frame): void {
    if (this.closed) return;
    if (frame.seq > this.last) this.last = frame.seq;
    this.write(frame);
  }

  /** Bytes written that the socket has not sent yet. */
  get waiting(): number {
    return this.res.socket?.writableLength ?? 0;
  }

  /**
   * Writes straight to the socket, framed as the response's body is: the same bytes go to a
   * thousand streams, and the HTTP layer's own framing of each write costs more than the write.
   * The response still ends the body (`res.end()` writes the last chunk).
   */
  write(piece: Piece): void {
    if (this.closed) return;
    const socket = this.res.socket;
    if (!socket || socket.destroyed) {
      this.close(true);
      return;
    }
    if (!this.corked) {
      // Events that arrive together leave in one write to the socket, not one each.
      this.corked = true;
      socket.cork();
      this.onCork(this);
    }
    if (this.chunked) {
      piece.chunk ??= chunkOf(piece.bytes);
      socket.write(piece.chunk);
    } else {
      socket.write(piece.bytes);
    }
    // What the socket has not taken yet stays in memory: past the limit the client is too slow.
    if (socket.writableLength > this.bufferBytes) this.close(true);
  }

  /** The missed events are out: the held live ones follow, without repeats. */
  goLive(): void {
    const held = this.held ?? [];
    this.held = undefined;
    this.heldBytes = 0;
    for (const frame of held) if (this.wants(frame)) this.send(frame);
  }

  close(abort = false): void {
    if (this.closed) return;
    this.closed = true;
    this.held = undefined;
    this.onClose(this);
    if (abort) this.res.destroy();
    else this.res.end();
  }

  /** Resolves once what was written has reached the socket, or the stream has closed. */
  async drained(): Promise<void> {
    this.uncork();
    const socket = this.res.socket;
    if (this.closed || !socket || socket.writableLength === 0) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        socket.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      socket.on('drain', done);
      this.res.on('close', done);
    });
  }

  uncork(): void {
    if (!this.corked) return;
    this.corked = false;
    this.res.socket?.uncork();
  }
}
