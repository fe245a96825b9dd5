/**
 * `corral node`: the node agent that the `corral-node` DaemonSet runs on every Kubernetes node, through which
 * `corral serve` freezes, thaws, suspends and restores worker pods (docs/kubernetes.md, Idle tiers). Its token is
 * read from a file (the mounted Secret), never from a flag that `ps` would show; it closes on SIGINT or SIGTERM.
 */

import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { DEFAULT_NODE_AGENT_PORT, DEFAULT_NODE_MODEL_CACHE_DIR, runNodeAgent } from '../app/node-agent.js';
import { ConfigError } from '../config/settings.js';
import { DEFAULT_HUB_URL, modelDiskBudgetBytes } from '../domain/model-refs.js';
import { createLogger } from '../logger.js';
import { parseCount } from './args.js';

interface NodeFlags {
  listen: string;
  port: string;
  tokenFile?: string;
  cgroupRoot: string;
  cgroupVersion: 'auto' | 'v1' | 'v2';
  gpus: 'auto' | 'none';
  modelCacheDir: string;
  hubUrl: string;
  modelDiskBudgetGb?: string;
  logLevel: string;
}

function readToken(file: string | undefined): string {
  if (file === undefined)
    throw new ConfigError(
      '--token-file (CORRAL_NODE_TOKEN_FILE) is required: the Secret both Corral and the agent mount',
    );
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(`invalid --token-file: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (token.length < 16)
    throw new ConfigError('invalid --token-file: the token must be at least 16 characters');
  return token;
}

function hubUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`invalid --hub-url: ${text} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError('invalid --hub-url: it must be http or https');
  return text.replace(/\/+$/, '');
}

/** `--model-disk-budget-gb`: a positive number of GB, as corral serve's `models.diskBudgetGB`. */
function diskBudget(text: string | undefined): number | null {
  if (text === undefined) return null;
  const gigabytes = Number(text);
  if (text.trim() === '' || !Number.isFinite(gigabytes) || gigabytes <= 0)
    throw new ConfigError(`invalid --model-disk-budget-gb: ${text} is not a positive number of GB`);
  return modelDiskBudgetBytes(gigabytes);
}

export function makeNodeCommand(): Command {
  const command = new Command('node')
    .description(
      "run the node agent: freezes and thaws worker pods on this Kubernetes node for corral serve, and fills the node's model cache",
    )
    .addOption(
      new Option('--listen <host>', 'address to listen on (the node IP, with hostNetwork)').default(
        '0.0.0.0',
      ),
    )
    .addOption(new Option('--port <port>', 'port to listen on').default(String(DEFAULT_NODE_AGENT_PORT)))
    .addOption(
      new Option('--token-file <path>', 'file holding the shared token').env('CORRAL_NODE_TOKEN_FILE'),
    )
    .addOption(
      new Option('--cgroup-root <dir>', "the node's cgroup filesystem as mounted here").default(
        '/sys/fs/cgroup',
      ),
    )
    .addOption(
      new Option('--cgroup-version <version>', 'the hierarchy the kubelet uses (auto: read from the root)')
        .choices(['auto', 'v1', 'v2'])
        .default('auto'),
    )
    .addOption(
      new Option('--gpus <gpus>', "auto: suspend GPU state where the node's driver has the checkpoint API")
        .choices(['auto', 'none'])
        .default('auto'),
    )
    .addOption(
      new Option(
        '--model-cache-dir <dir>',
        "the node's hub cache (the hostPath worker pods mount their models from)",
      ).default(DEFAULT_NODE_MODEL_CACHE_DIR),
    )
    .addOption(
      new Option(
        '--hub-url <url>',
        "the Hugging Face hub models are fetched from (corral serve's models.hubUrl)",
      )
        .env('HF_ENDPOINT')
        .default(DEFAULT_HUB_URL),
    )
    .addOption(
      new Option(
        '--model-disk-budget-gb <GB>',
        "the node's model cache size past which the least recently used model no endpoint names is evicted (default: no budget)",
      ).env('CORRAL_NODE_MODEL_DISK_BUDGET_GB'),
    )
    .addOption(new Option('--log-level <level>', 'log level').default('info').env('CORRAL_LOG_LEVEL'));
  command.action(async (flags: NodeFlags) => {
    const logger = createLogger({ level: flags.logLevel, format: 'json' }).child({ role: 'node-agent' });
    const port = parseCount(flags.port, '--port');
    if (port === undefined || port > 65_535)
      throw new ConfigError('--port must be 0-65535 (0: any free port)');
    const agent = await runNodeAgent(
      {
        host: flags.listen,
        port,
        token: readToken(flags.tokenFile),
        cgroupRoot: flags.cgroupRoot,
        cgroupVersion: flags.cgroupVersion,
        gpus: flags.gpus,
        modelCacheDir: flags.modelCacheDir,
        hubUrl: hubUrl(flags.hubUrl),
        modelDiskBudgetBytes: diskBudget(flags.modelDiskBudgetGb),
      },
      logger,
    );
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'node agent shutting down');
      agent.close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });
  return command;
}
