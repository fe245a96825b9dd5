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
      const memoryGB = Math.round(Number(memoryMiB) / 1024);
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

/** "NVIDIA H100 80GB HBM3" with 80 GB -> "h100-80g"; "NVIDIA GeForce RTX 4090" with 24 GB -> "rtx-4090-24g". */
export function productIdFor(name: string, memoryGB: number): string {
  const words = name
    .toLowerCase()
    .split(/[\s_-]+/)
    .filter((w) => !['nvidia', 'geforce', 'tesla', 'quadro'].includes(w))
    .filter((w) => !/^\d+gb$|^hbm\d*e?$|^pcie$|^sxm\d*$|^nvl$|^gddr\d*x?$/.test(w));
  const model = words.join('-').replace(/[^a-z0-9-]/g, '') || 'gpu';
  return `${model}-${memoryGB}g`;
}

/** CUDA versions every GPU's driver supports (a worker may land on any of them). */
export function supportedCudaVersions(gpus: Gpu[]): string[] {
  if (gpus.length === 0) return [];
  const lowest = gpus.map((g) => g.cudaVersion).reduce((a, b) => (compareVersions(a, b) <= 0 ? a : b));
  return KNOWN_CUDA_VERSIONS.filter((v) => compareVersions(v, lowest) <= 0);
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
