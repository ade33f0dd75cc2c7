// Draws media/icon.png (128x128, RGBA) with no dependency: four rank bars, the one that failed first
// in red, under a magnifying glass. 4x4 supersampling for smooth edges. The PNG is committed; run
// `node scripts/icon.mjs` from editors/vscode only when changing it.
import { writeFileSync } from "node:fs";
import { deflateSync } from "node:zlib";

const N = 128, SS = 4;
const hex = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
const inRoundRect = (x, y, x0, y0, x1, y1, r) => {
  if (x < x0 || x > x1 || y < y0 || y > y1) return false;
  const cx = Math.min(Math.max(x, x0 + r), x1 - r), cy = Math.min(Math.max(y, y0 + r), y1 - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
};
const distToSegment = (x, y, ax, ay, bx, by) => {
  const t = Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)));
  return Math.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay)));
};
// shapes, painted in order: [test(x, y), colour]
const shapes = [
  [(x, y) => inRoundRect(x, y, 0, 0, 128, 128, 24), "#1f2a44"],
  [(x, y) => inRoundRect(x, y, 20, 28, 84, 40, 5), "#6b7a99"],
  [(x, y) => inRoundRect(x, y, 20, 47, 72, 59, 5), "#6b7a99"],
  [(x, y) => inRoundRect(x, y, 20, 66, 98, 78, 5), "#f14c4c"],
  [(x, y) => inRoundRect(x, y, 20, 85, 62, 97, 5), "#6b7a99"],
  [(x, y) => Math.abs(Math.hypot(x - 78, y - 66) - 25) <= 5, "#ffffff"],
  [(x, y) => distToSegment(x, y, 97, 85, 112, 101) <= 7, "#ffffff"],
];
const raw = Buffer.alloc(N * (N * 4 + 1));
for (let py = 0; py < N; py++) {
  raw[py * (N * 4 + 1)] = 0; // filter: none
  for (let px = 0; px < N; px++) {
    let r = 0, g = 0, b = 0, a = 0;
    for (let sy = 0; sy < SS; sy++) for (let sx = 0; sx < SS; sx++) {
      const x = px + (sx + 0.5) / SS, y = py + (sy + 0.5) / SS;
      let c = null;
      for (const [hit, colour] of shapes) if (hit(x, y)) c = hex(colour);
      if (c) { r += c[0]; g += c[1]; b += c[2]; a += 1; }
    }
    const o = py * (N * 4 + 1) + 1 + px * 4;
    raw[o] = a ? r / a : 0; raw[o + 1] = a ? g / a : 0; raw[o + 2] = a ? b / a : 0; raw[o + 3] = (255 * a) / (SS * SS);
  }
}
const crcTable = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
const crc = (buf) => { let c = 0xffffffff; for (const byte of buf) c = crcTable[(c ^ byte) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
const chunk = (type, data) => {
  const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type), data]);
  const sum = Buffer.alloc(4); sum.writeUInt32BE(crc(body));
  return Buffer.concat([len, body, sum]);
};
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(N, 0); ihdr.writeUInt32BE(N, 4); ihdr[8] = 8; ihdr[9] = 6; // 8-bit RGBA
writeFileSync("media/icon.png", Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw, { level: 9 })), chunk("IEND", Buffer.alloc(0)),
]));
