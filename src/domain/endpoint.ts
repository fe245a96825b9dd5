/** The clean internal model of an Endpoint; the wire shapes live in src/contract only. */
import type { ModelRef } from './models.js';

export type ScalingPolicyType = 'queue' | 'concurrency';

export type VolumeType = 'local' | 'network';

/** `http`: a load-balanced URL (today's endpoints); `queue`: workers pull jobs over the RunPod worker protocol. */
export type EndpointType = 'http' | 'queue';

export const ENDPOINT_TYPES: readonly EndpointType[] = ['http', 'queue'];

export interface WorkerSettings {
  minWorkers: number;
  maxWorkers: number;
  idleTimeoutSeconds: number;
  maxConcurrent: number;
  gpusPerWorker: number;
  /** A version from the limits' cudaVersionList, or `any`. */
  cudaVersion: string;
  requestTimeoutSeconds: number;
  /**
   * Seconds an idle worker stays frozen (its processes stopped, its GPUs held) before it is suspended or stopped;
   * 0: an idle worker past idleTimeoutSeconds is stopped at once (docs/workers.md, Idle tiers).
   */
  keepFrozenSeconds: number;
  /** Seconds a suspended worker (GPU state in host memory, no GPU held) stays before it is stopped; 0: never suspended. */
  keepSuspendedSeconds: number;
}

export interface ScalingPolicy {
  type: ScalingPolicyType;
  value: number;
}

/**
 * When a node's container runtime pulls the image (Kubernetes' spelling): `Always` at every start, `IfNotPresent`
 * only when the node lacks it, `Never` (the image must be on the node).
 */
export type ImagePullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export const IMAGE_PULL_POLICIES: readonly ImagePullPolicy[] = ['Always', 'IfNotPresent', 'Never'];

export interface ImageSpec {
  ref: string;
  /** Id of saved registry credentials; empty when the image is public. */
  authId: string;
  command: string;
  /** The Kubernetes runtime's pull policy for this endpoint; absent: the installation's (docs/kubernetes.md). */
  pullPolicy?: ImagePullPolicy;
}

export type VolumeMount =
  | { type: 'local'; sizeGB: number; mountPath: string }
  | { type: 'network'; storageId: string; mountPath: string };

export interface EnvVar {
  key: string;
  value: string;
}

export interface HealthCheck {
  path: string;
  /**
   * The owner named the path (create or update): it is probed as named, with no fallback to `/`. Absent when the
   * path is the default (and on specs stored before this existed): see health-path.ts, fallsBackToRoot.
   */
  pathNamed?: true;
  initialDelaySeconds: number;
  periodSeconds: number;
  timeoutSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

export interface EndpointSpec {
  name: string;
  appName: string;
  workers: WorkerSettings;
  port: number;
  scaling: ScalingPolicy;
  image: ImageSpec;
  productIds: string[];
  rootfsSizeGB: number;
  volumes: VolumeMount[];
  clusterId: string;
  env: EnvVar[];
  health: HealthCheck;
  /** Its URL answers without a key (the gateway otherwise needs one of the owner's keys or an invoke key). */
  public: boolean;
  /** How its workers get work: `http` requests (and jobs delivered as requests) or `queue` (the worker protocol). */
  type: EndpointType;
  /** Where a job of an `http` endpoint is delivered: `POST {jobsPath}` with the input as the JSON body. */
  jobsPath: string;
  /** Hub repositories its workers load: on the worker's machine before a GPU is held, mounted read-only. */
  models: ModelRef[];
  /**
   * The model name OpenAI clients send as `model` for this endpoint: the gateway's model router (`/openai/v1/...`)
   * picks it by this name among its owner's endpoints (openai-model.ts). Unique among an owner's live endpoints.
   */
  openaiModel?: string;
}

export type EndpointState = 'deploying' | 'serving' | 'updating' | 'stopped' | 'failed' | 'deleting';

export interface StateReport<S extends string> {
  state: S;
  /** A stable UPPER_SNAKE code when something is wrong, else empty. */
  error: string;
  message: string;
}

/** What the owner asked for: the controller converges the runtime towards it. */
export type DesiredRun = 'running' | 'stopped';

export interface Endpoint {
  id: string;
  ownerId: string;
  spec: EndpointSpec;
  /** Changes whenever a field that needs new workers changes (see revision.ts). */
  revision: number;
  desired: DesiredRun;
  status: StateReport<EndpointState>;
  createdAt: number;
  updatedAt: number;
}

export const DEFAULT_HEALTH: Omit<HealthCheck, 'path'> = {
  initialDelaySeconds: 0,
  periodSeconds: 2,
  timeoutSeconds: 2,
  successThreshold: 1,
  failureThreshold: 3,
};

export const DEFAULT_HEALTH_PATH = '/health';

/** Where a job of an `http` endpoint is delivered when the spec names no path. */
export const DEFAULT_JOBS_PATH = '/run';
