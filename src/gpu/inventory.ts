/** One GPU this server can place workers on, real (from nvidia-smi) or simulated (from --gpus). */
export interface Gpu {
  index: number;
  uuid: string;
  /** Marketing name, e.g. "NVIDIA H100 80GB HBM3". */
  model: string;
  productId: string;
  memoryGB: number;
  driverVersion: string;
  /** Highest CUDA version the driver supports, e.g. "12.4". */
  cudaVersion: string;
  simulated: boolean;
}

export interface SimulatedGroup {
  productId: string;
  count: number;
  cudaVersion: string;
}

export type GpuSource = { kind: 'auto' } | { kind: 'simulated'; groups: SimulatedGroup[] };

export const DEFAULT_SIMULATED_PRODUCT = 'sim-80g';
export const DEFAULT_SIMULATED_CUDA = '12.8';

/** CUDA versions a worker may ask for; a driver supports every version up to its own. */
export const KNOWN_CUDA_VERSIONS = [
  '11.8',
  '12.0',
  '12.1',
  '12.2',
  '12.3',
  '12.4',
  '12.5',
  '12.6',
  '12.8',
  '12.9',
  '13.0',
];

const GROUP = /^(?:([a-z0-9][a-z0-9-]*):)?(\d+)(?:@(\d+\.\d+))?$/;

/**
 * Parses `--gpus`: `auto`, a count (`8`), or groups such as `h100-80g:8` or `h100-80g:4,a100-40g:2@12.2`
 * (optional `@cuda` is the simulated driver's CUDA version). Throws with a readable message.
 */
export function parseGpuSource(value: string): GpuSource {
  const trimmed = value.trim().toLowerCase();
  if (trimmed === 'auto') return { kind: 'auto' };
  const groups = trimmed.split(',').map((part) => {
    const match = GROUP.exec(part.trim());
    if (!match) {
      throw new Error(`"${part}" is not auto, a count, or model:count (e.g. h100-80g:8 or h100-80g:8@12.4)`);
    }
    return {
      productId: match[1] ?? DEFAULT_SIMULATED_PRODUCT,
      count: Number(match[2]),
      cudaVersion: match[3] ?? DEFAULT_SIMULATED_CUDA,
    };
  });
  return { kind: 'simulated', groups };
}

export function simulatedInventory(groups: SimulatedGroup[]): Gpu[] {
  const gpus: Gpu[] = [];
  for (const group of groups) {
    for (let i = 0; i < group.count; i++) {
      const index = gpus.length;
      gpus.push({
        index,
        uuid: `GPU-simulated-${group.productId}-${index}`,
        model: `Simulated ${group.productId}`,
        productId: group.productId,
        memoryGB: memoryFromProductId(group.productId),
        driverVersion: 'simulated',
        cudaVersion: group.cudaVersion,
        simulated: true,
      });
    }
  }
  return gpus;
}

export const NVIDIA_SMI_QUERY = [
  '--query-gpu=index,uuid,name,memory.total,driver_version',
  '--format=csv,noheader,nounits',
];

/**
 * Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total,driver_version --format=csv,noheader,nounits`
 * plus the CUDA version from plain `nvidia-smi`'s banner.
 */
export function parseNvidiaSmi(csv: string, banner: string): Gpu[] {
  const cudaVersion = /CUDA Version:\s*([\d.]+)/.exec(banner)?.[1] ?? '';
  return csv
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line) => {
      const [index, uuid, name, memoryMiB, driverVersion] = line.split(',').map((field) => field.trim());
      if (index === undefined || uuid === undefined || name === undefined || memoryMiB === undefined) {
        throw new Error(`unexpected nvidia-smi line: ${line}`);
      }
      const memoryGB = marketedMemoryGB(name, Number(memoryMiB));
      return {
        index: Number(index),
        uuid,
        model: name,
        productId: productIdFor(name, memoryGB),
        memoryGB,
        driverVersion: driverVersion ?? '',
        cudaVersion,
        simulated: false,
      };
    });
}

/** The memory sizes NVIDIA sells GPUs with, in GB. */
const MARKETED_GB = [
  2, 3, 4, 6, 8, 10, 11, 12, 16, 20, 24, 32, 40, 48, 64, 80, 94, 96, 128, 141, 144, 180, 192, 288,
];

/**
 * The memory size a GPU is known by, from nvidia-smi's name and memory.total (MiB). nvidia-smi reports less than
 * the card is sold with (ECC and driver reservations: an L4 says 23034 MiB, an H200 143771 MiB), so rounding gives
 * names nobody knows (l4-22g, h200-140g). The size written in the name wins ("NVIDIA H100 80GB HBM3" -> 80) when it
 * is plausibly the card's own (a GH200's "480GB" counts the CPU's memory too); otherwise the marketed size nearest
 * to the reported GiB; a card near none of them gets its GiB rounded.
 */
export function marketedMemoryGB(name: string, memoryMiB: number): number {
  const gib = memoryMiB / 1024;
  const named = Number(/(\d+)\s*GB\b/i.exec(name)?.[1] ?? Number.NaN);
  if (named >= gib * 0.9 && named <= gib * 1.25) return named;
  const nearest = MARKETED_GB.reduce((best, size) =>
    Math.abs(size - gib) < Math.abs(best - gib) ? size : best,
  );
  return Math.abs(nearest - gib) <= gib * 0.1 ? nearest : Math.round(gib);
}

/**
 * "NVIDIA H100 80GB HBM3" with 80 GB -> "h100-80g"; "NVIDIA GeForce RTX 4090" with 24 GB -> "rtx4090-24g" (RTX and
 * GTX stick to their number, as the cards are called).
 */
export function productIdFor(name: string, memoryGB: number): string {
  const words = name
    .toLowerCase()
    .split(/[\s_-]+/)
    .filter((w) => !['nvidia', 'geforce', 'tesla', 'quadro', 'generation'].includes(w))
    .filter((w) => !/^\d+gb$|^hbm\d*e?$|^pcie$|^sxm\d*$|^nvl$|^gddr\d*x?$/.test(w));
  const model =
    words
      .join('-')
      .replace(/\b([rg]tx)-(\d)/g, '$1$2')
      .replace(/[^a-z0-9-]/g, '') || 'gpu';
  return `${model}-${memoryGB}g`;
}

/** CUDA versions every GPU's driver supports (a worker may land on any of them). */
export function supportedCudaVersions(gpus: Gpu[]): string[] {
  if (gpus.length === 0) return [];
  return cudaVersionsUpTo(gpus.map((g) => g.cudaVersion).reduce(lowerVersion));
}

/** The known CUDA versions a driver supporting `version` runs (every one up to it). */
export function cudaVersionsUpTo(version: string): string[] {
  return KNOWN_CUDA_VERSIONS.filter((v) => compareVersions(v, version) <= 0);
}

export function lowerVersion(a: string, b: string): string {
  return compareVersions(a, b) <= 0 ? a : b;
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const diff = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

function memoryFromProductId(productId: string): number {
  return Number(/-(\d+)g$/.exec(productId)?.[1] ?? 0);
}
