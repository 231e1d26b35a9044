/** Walking Spool's cursor pages: pass each `next_cursor` back as `cursor` until it is empty. */

/**
 * Yields every page, fetching the next only when the caller asks for it, so breaking out of a
 * `for await` stops the walk.
 */
export async function* walkPages<P extends { next_cursor: string }>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
): AsyncGenerator<P, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield page;
    cursor = page.next_cursor;
  } while (cursor);
}

/** Yields the elements of every page in order. */
export async function* walkItems<P, T>(
  pages: AsyncIterable<P>,
  itemsOf: (page: P) => readonly T[],
): AsyncGenerator<T, void, undefined> {
  for await (const page of pages) yield* itemsOf(page);
}
