/** `npm run bench -- wake`: the frozen tier on Docker (thaw vs warm vs cold) and the suspended tier on a real GPU. */
import { benchDockerThaw } from './docker-thaw.js';
import { benchGpuRestore } from './gpu-restore.js';

export async function runWakeBench(): Promise<void> {
  console.log('\n== wake: how fast an idle worker answers again (issue 24) ==');
  await benchDockerThaw();
  await benchGpuRestore();
}
