// Grants per second over the run, with each fault shaded from its start to its healing (dark) and
// on to the end of the time it counts for (light), and each anomaly marked in red at the top.
// Written by hand: a few rectangles, a line and some text.
import { claimedSafeUnder, FAULT_CLASSES, type FaultClass } from './faults';
import type { ChaosResult } from './run';

const PALETTE = [
  '#e6194b',
  '#3cb44b',
  '#4363d8',
  '#f58231',
  '#911eb4',
  '#42d4f4',
  '#f032e6',
  '#9a6324',
  '#469990',
  '#800000',
  '#808000',
  '#000075',
  '#a9a9a9',
  '#bfef45',
];
const W = 960;
const PLOT_H = 220;
const LEFT = 50;
const TOP = 46;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export function grantsSvg(result: ChaosResult, title: string): string {
  const seconds = Math.max(1, Math.ceil((result.stoppedAt - result.t0) / 1000));
  const bins = new Array<number>(seconds).fill(0);
  for (const op of result.ops) {
    const s = Math.floor(((op.grantAt ?? -Infinity) - result.t0) / 1000);
    if (s >= 0 && s < seconds) bins[s]++;
  }
  const top = Math.max(5, Math.ceil(Math.max(...bins) / 5) * 5);
  const plotW = W - LEFT - 10;
  const x = (s: number) => LEFT + (s / seconds) * plotW;
  const y = (v: number) => TOP + PLOT_H - (v / top) * PLOT_H;
  const classes = (Object.keys(FAULT_CLASSES) as FaultClass[]).filter((c) => result.faults.some((f) => f.cls === c));
  const color = (c: FaultClass) => PALETTE[Object.keys(FAULT_CLASSES).indexOf(c) % PALETTE.length];
  const out: string[] = [];
  for (const f of result.faults) {
    const [a, b, c] = [f.start, f.healed, f.until].map((t) => x(Math.min(seconds, (t - result.t0) / 1000)));
    out.push(
      `<rect x="${a.toFixed(1)}" y="${TOP}" width="${Math.max(1, b - a).toFixed(1)}" height="${PLOT_H}" fill="${color(f.cls)}" fill-opacity="0.45"><title>${esc(f.cls)}</title></rect>`,
    );
    out.push(`<rect x="${b.toFixed(1)}" y="${TOP}" width="${Math.max(0, c - b).toFixed(1)}" height="${PLOT_H}" fill="${color(f.cls)}" fill-opacity="0.15"/>`);
  }
  const tickEvery = seconds > 120 ? 30 : 10;
  for (let s = 0; s <= seconds; s += tickEvery)
    out.push(
      `<line x1="${x(s)}" y1="${TOP + PLOT_H}" x2="${x(s)}" y2="${TOP + PLOT_H + 4}" stroke="#333"/><text x="${x(s)}" y="${TOP + PLOT_H + 16}" text-anchor="middle">${s}</text>`,
    );
  for (let v = 0; v <= top; v += top / 5)
    out.push(
      `<line x1="${LEFT - 4}" y1="${y(v)}" x2="${W - 10}" y2="${y(v)}" stroke="#ddd"/><text x="${LEFT - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
    );
  for (const a of result.anomalies) {
    const ax = x(Math.min(seconds, Math.max(0, (a.t - result.t0) / 1000))).toFixed(1);
    out.push(`<path d="M${ax},${TOP} l-4,-8 h8 z" fill="#d00"><title>${esc(`${a.check} (${a.fault}): ${a.detail}`)}</title></path>`);
  }
  const points = bins.map((v, s) => `${x(s + 0.5).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  out.push(`<polyline points="${points}" fill="none" stroke="#111" stroke-width="1.5"/>`);
  const legendTop = TOP + PLOT_H + 36;
  classes.forEach((c, i) => {
    const lx = LEFT + (i % 4) * 225;
    const ly = legendTop + Math.floor(i / 4) * 18;
    out.push(
      `<rect x="${lx}" y="${ly - 10}" width="12" height="12" fill="${color(c)}" fill-opacity="0.6"/><text x="${lx + 16}" y="${ly}">${esc(c)}${claimedSafeUnder(c, result.options.safe) ? '' : ' (not claimed safe)'}</text>`,
    );
  });
  const height = legendTop + Math.ceil(classes.length / 4) * 18 + 8;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${height}" fill="#fff"/>`,
    `<text x="${LEFT}" y="16" font-size="13">${esc(title)}: grants per second</text>`,
    `<text x="${LEFT}" y="31">faults shaded (dark: active; light: counted until a lease and 1.5-2.5 s later); red marks: anomalies; x: seconds from the start</text>`,
    ...out,
    `<rect x="${LEFT}" y="${TOP}" width="${plotW}" height="${PLOT_H}" fill="none" stroke="#333"/>`,
    '</svg>',
    '',
  ].join('\n');
}
