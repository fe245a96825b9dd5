/**
 * Kubernetes resource quantities (`8Gi`, `512Mi`, `80G`, `1e3`, `500m`): written from byte counts in the largest
 * binary unit that keeps them whole, and read back into numbers. Pure.
 */

const GIB = 2 ** 30;
const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: GIB,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};
const DECIMAL: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

/** 8 GiB -> `8Gi`, 1.5 GiB -> `1536Mi`, 1000 -> `1000`: whole bytes, in the largest binary unit that divides them. */
export function bytesQuantity(bytes: number): string {
  const whole = Math.round(bytes);
  for (const [unit, size] of Object.entries(BINARY).reverse()) {
    if (whole >= size && whole % size === 0) return `${whole / size}${unit}`;
  }
  return String(whole);
}

/** GiB as a quantity: 80 -> `80Gi`, 0.5 -> `512Mi`. */
export function gibQuantity(gib: number): string {
  return bytesQuantity(gib * GIB);
}

/** The number a quantity stands for (bytes for memory and storage), or undefined when it is not one. */
export function parseQuantity(quantity: string): number | undefined {
  const match = /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/.exec(
    quantity.trim(),
  );
  if (!match) return undefined;
  const number = Number(match[1]);
  if (match[2] !== undefined) return number * 10 ** Number(match[2].slice(1));
  const suffix = match[3] ?? '';
  const scale = BINARY[suffix] ?? DECIMAL[suffix];
  return scale === undefined ? undefined : number * scale;
}
