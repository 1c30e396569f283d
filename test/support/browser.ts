// Debian's Chromium, headless, driven by puppeteer-core over the DevTools protocol: no browser
// download, a fresh profile per launch, nothing that reaches out to the network on its own. And
// the same Chromium run once as a user would, for a screenshot or a dump of the page's DOM.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import puppeteer, { type Browser } from 'puppeteer-core';

export const CHROMIUM = process.env.HOLDFAST_CHROMIUM ?? '/usr/bin/chromium';

/** Headless, and quiet: nothing of its own on the network. */
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), 'holdfast-chromium-'));
  const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: [...FLAGS, `--user-data-dir=${profile}`] });
  return {
    browser,
    async close() {
      await browser.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * One run of `chromium --headless --screenshot=FILE URL` (or `--dump-dom URL`, whose DOM it
 * returns): what a user's one-shot capture shows, taken once the page has loaded, with no
 * DevTools session waiting for anything.
 */
export async function oneShot(url: string, output: { screenshot: string } | 'dump-dom', windowSize = '1100,420'): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'holdfast-chromium-'));
  try {
    const what = output === 'dump-dom' ? '--dump-dom' : `--screenshot=${output.screenshot}`;
    const args = [...FLAGS, `--user-data-dir=${profile}`, `--window-size=${windowSize}`, what, url];
    const { stdout } = await promisify(execFile)(CHROMIUM, args, { maxBuffer: 64 << 20, timeout: 60_000 });
    return stdout;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

/**
 * How many horizontal bars of colour `rgb` (runs at least `minWidth` pixels long) a PNG shows
 * below `top`, counted by Chromium itself: the image drawn on a canvas and its pixels read.
 */
export async function countBars(browser: Browser, png: string, rgb: [number, number, number], top: number, minWidth = 40): Promise<number> {
  const page = await browser.newPage();
  try {
    const dataUrl = `data:image/png;base64,${readFileSync(png).toString('base64')}`;
    return await page.evaluate(
      async (src, [r, g, b], from, least) => {
        const image = new Image();
        image.src = src;
        await image.decode();
        const canvas = document.createElement('canvas');
        [canvas.width, canvas.height] = [image.width, image.height];
        const context = canvas.getContext('2d')!;
        context.drawImage(image, 0, 0);
        const { data } = context.getImageData(0, 0, image.width, image.height);
        let bars = 0;
        let inBar = false;
        for (let y = from; y < image.height; y++) {
          let run = 0;
          let longest = 0;
          for (let x = 0; x < image.width; x++) {
            const i = (y * image.width + x) * 4;
            run = Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) < 30 ? run + 1 : 0;
            longest = Math.max(longest, run);
          }
          if (longest >= least && !inBar) bars++;
          inBar = longest >= least;
        }
        return bars;
      },
      dataUrl,
      rgb,
      top,
      minWidth,
    );
  } finally {
    await page.close();
  }
}
