/**
 * The hub's own Python client (`huggingface_hub`, test/fixtures/hub-python-client.py) run as a worker would run it:
 * in a container of the test image beside a Docker worker, with that worker's mounts (`--volumes-from`: the model
 * cache's read-only binds) and its HF_HUB_CACHE and HF_HUB_OFFLINE, no network, and this machine's interpreter
 * (`python3` or CORRAL_TEST_PYTHON) bound in read-only with the libraries it links, as scripts/build-runpod-image.sh
 * takes the host's Python. Opt-in: where the interpreter cannot import huggingface_hub, `hubPython` is undefined and
 * says why once.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_IMAGE } from './test-image.js';

const PYTHON = process.env.CORRAL_TEST_PYTHON ?? 'python3';
const CLIENT = fileURLToPath(new URL('../fixtures/hub-python-client.py', import.meta.url));
const CLIENT_IN_CONTAINER = '/hub-python-client.py';

interface Interpreter {
  version: string;
  executable: string;
  prefixes: string[];
  /** Where huggingface_hub is imported from (a --target directory, or the interpreter's site-packages). */
  packages: string;
  /** The interpreter's extension modules (zlib, ssl...), which link libraries of their own. */
  extensions: string;
}

function findInterpreter(): Interpreter | undefined {
  try {
    const out = execFileSync(
      PYTHON,
      [
        '-c',
        'import json, os, sys, sysconfig, huggingface_hub as h; print(json.dumps([h.__version__, os.path.realpath(sys.executable), sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(h.__file__)), sysconfig.get_config_var("DESTSHARED")]))',
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const [version, executable, basePrefix, prefix, packages, extensions] = JSON.parse(out) as string[];
    return {
      version: version ?? '',
      executable: executable ?? '',
      prefixes: [...new Set([basePrefix ?? '', prefix ?? ''])],
      packages: packages ?? '',
      extensions: extensions ?? '',
    };
  } catch {
    return undefined;
  }
}

/**
 * The directories of the libraries the interpreter and its extension modules link (ldd's absolute paths), to bind
 * into a `FROM scratch` container whole: the image's own hold only what node links.
 */
function libraryDirs(interpreter: Interpreter): string[] {
  const modules = readdirSync(interpreter.extensions)
    .filter((name) => name.endsWith('.so'))
    .map((name) => join(interpreter.extensions, name));
  const out = spawnSync('ldd', [interpreter.executable, ...modules], { encoding: 'utf8' }).stdout;
  const libraries = [...out.matchAll(/(?:=> )?(\/\S+) \(0x/g)].map((match) => match[1] ?? '');
  return [...new Set(libraries.filter(Boolean).map((library) => dirname(library)))];
}

export interface HubClientFile {
  size: number;
  sha256: string;
  gitSha1: string;
}

export interface HubClientRun {
  version: string;
  offline: string;
  revisions: Record<string, { snapshot: string; download: string; files: Record<string, HubClientFile> }>;
}

const interpreter = findInterpreter();
if (!interpreter)
  process.stderr.write(
    `skipping the huggingface_hub checks: ${PYTHON} cannot import huggingface_hub (pip install --target DIR huggingface_hub, then PYTHONPATH=DIR, or set CORRAL_TEST_PYTHON)\n`,
  );

/** The client's version where it runs here, else undefined (the checks skip). */
export const hubPythonVersion = interpreter?.version;

/**
 * Runs the client in a container beside the worker `containerId`: snapshot_download and hf_hub_download of `file` for
 * each revision, offline, against the worker's HF_HUB_CACHE. Its JSON, or the client's own words when it failed.
 */
export function runHubPythonBeside(
  containerId: string,
  repoId: string,
  file: string,
  revisions: string[],
): Promise<HubClientRun> {
  if (!interpreter) throw new Error('huggingface_hub is not importable here');
  const workerEnv = JSON.parse(
    execFileSync('docker', ['inspect', containerId, '--format', '{{json .Config.Env}}'], {
      encoding: 'utf8',
    }),
  ) as string[];
  const hubEnv = workerEnv.filter((entry) => /^HF_HUB_(CACHE|OFFLINE)=/.test(entry));
  const libraries = libraryDirs(interpreter);
  const binds = [...new Set([...interpreter.prefixes, interpreter.packages, ...libraries])].flatMap(
    (path) => ['-v', `${path}:${path}:ro`],
  );
  const args = [
    'run',
    '--rm',
    '--network',
    'none',
    '--volumes-from',
    containerId,
    ...binds,
    '-v',
    `${CLIENT}:${CLIENT_IN_CONTAINER}:ro`,
    ...hubEnv.flatMap((entry) => ['-e', entry]),
    '-e',
    `PYTHONPATH=${interpreter.packages}`,
    // In the order ldd found them: the image's LD_LIBRARY_PATH would find another Python's libpython first.
    '-e',
    `LD_LIBRARY_PATH=${libraries.join(':')}`,
    // The client's own files (token, xet cache) go under HOME: the image's /tmp, not the read-only mount.
    '-e',
    'HOME=/tmp',
    '--entrypoint',
    interpreter.executable,
    TEST_IMAGE,
    CLIENT_IN_CONTAINER,
    repoId,
    file,
    ...revisions,
  ];
  return new Promise((resolve, reject) => {
    execFile('docker', args, { encoding: 'utf8', timeout: 120_000 }, (error, out, err) =>
      error ? reject(new Error(`${error.message}\n${err}`)) : resolve(JSON.parse(out) as HubClientRun),
    );
  });
}
