/**
 * A real browser for the console's tests: Debian's Chromium (`apt-get install chromium`; `.ci/run`
 * installs it) driven by playwright-core. `CHROMIUM_PATH` names another binary.
 */
import { access, constants, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';

const CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/lib/chromium/chromium',
  '/usr/bin/google-chrome',
];

export async function findChromium(): Promise<string> {
  const candidates = process.env.CHROMIUM_PATH ? [process.env.CHROMIUM_PATH] : CANDIDATES;
  for (const path of candidates) {
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {
      // Try the next one.
    }
  }
  throw new Error(
    `no Chromium found (looked at ${candidates.join(', ')}): install it with \`apt-get install chromium\` or set CHROMIUM_PATH`,
  );
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: await findChromium(),
    headless: true,
    // Tests run as root in CI containers, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/** Where the README's screenshots live. */
export const SCREENSHOTS = fileURLToPath(new URL('../../docs/console/', import.meta.url));

/**
 * Writes a screenshot of the page to docs/console/NAME.png when SPOOL_SCREENSHOTS=1
 * (`npm run screenshots`), so that a test run does not rewrite the documentation's images.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.SPOOL_SCREENSHOTS !== '1') return;
  await mkdir(SCREENSHOTS, { recursive: true });
  // From the top, so that the sticky header stays where it belongs in a full-page picture.
  await page.evaluate('window.scrollTo(0, 0)');
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}
