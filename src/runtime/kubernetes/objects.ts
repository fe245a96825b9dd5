/**
 * The subset of Kubernetes API objects Corral's Kubernetes runtime makes and reads (Pod, Secret), as plain types.
 * They follow the official client's models (`V1Pod`, `V1Secret` of @kubernetes/client-node) field for field, with the
 * same required fields, so that an object built here can be handed to the client as a V1Pod and a V1Pod read from it
 * can be handed to the mapping here. Timestamps are `Date` in the client and RFC 3339 strings on the wire: both are
 * accepted where they are read.
 */

/** A resource quantity as the API writes it: `8Gi`, `500m`, `1`, `80G`. */
export type Quantity = string;

export type Timestamp = string | Date;

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: { [key: string]: string };
  annotations?: { [key: string]: string };
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: Timestamp;
  /** Set when the pod is being deleted: it is terminating and will be gone after its grace period. */
  deletionTimestamp?: Timestamp;
  deletionGracePeriodSeconds?: number;
  /** The objects this one depends on; the one with `controller: true` is its controller (kubectl drain asks). */
  ownerReferences?: OwnerReference[];
}

/** One owner of an object: the garbage collector deletes the object once every owner is gone. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface EnvVar {
  name: string;
  value?: string;
  /** A value read from a Secret's key at the container's start (the value is not in the pod's spec). */
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}

export interface ContainerPort {
  containerPort: number;
  name?: string;
  protocol?: string;
}

export interface ResourceRequirements {
  limits?: { [key: string]: Quantity };
  requests?: { [key: string]: Quantity };
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}

export interface Capabilities {
  add?: string[];
  drop?: string[];
}

export interface SecurityContext {
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: Capabilities;
  seccompProfile?: { type: string; localhostProfile?: string };
}

export interface Container {
  name: string;
  image?: string;
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Replaces the image's ENTRYPOINT. */
  command?: string[];
  /** Replaces the image's CMD (what Docker's `Cmd` is). */
  args?: string[];
  env?: EnvVar[];
  ports?: ContainerPort[];
  resources?: ResourceRequirements;
  volumeMounts?: VolumeMount[];
  securityContext?: SecurityContext;
}

export interface Volume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: Quantity };
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  hostPath?: { path: string; type?: string };
}

/** A preferred node term: the scheduler favours nodes matching it by its weight, and may place elsewhere. */
/** A node selector requirement: `key` with `operator` (In, NotIn, Exists, DoesNotExist...) on `values`. */
export interface NodeSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface PreferredSchedulingTerm {
  weight: number;
  preference: { matchExpressions: NodeSelectorRequirement[] };
}

/** A preferred pod term: the scheduler favours (or, in an anti-affinity, avoids) nodes whose pods match it. */
export interface WeightedPodAffinityTerm {
  weight: number;
  podAffinityTerm: {
    topologyKey: string;
    labelSelector: {
      matchLabels?: { [key: string]: string };
      matchExpressions?: { key: string; operator: string; values?: string[] }[];
    };
  };
}

export interface Toleration {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export interface PodSpec {
  containers: Container[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  nodeSelector?: { [key: string]: string };
  /** Set by the scheduler's binding: the node the pod runs on. */
  nodeName?: string;
  tolerations?: Toleration[];
  affinity?: {
    nodeAffinity?: {
      preferredDuringSchedulingIgnoredDuringExecution?: PreferredSchedulingTerm[];
      /** Every term is a choice; a node must meet every requirement of one of them. */
      requiredDuringSchedulingIgnoredDuringExecution?: {
        nodeSelectorTerms: { matchExpressions: NodeSelectorRequirement[] }[];
      };
    };
    podAffinity?: { preferredDuringSchedulingIgnoredDuringExecution: WeightedPodAffinityTerm[] };
    podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution: WeightedPodAffinityTerm[] };
  };
  volumes?: Volume[];
  imagePullSecrets?: { name: string }[];
  automountServiceAccountToken?: boolean;
  enableServiceLinks?: boolean;
  /** The kubelet fails the pod this long after its start (a pre-pull pod's deadline). */
  activeDeadlineSeconds?: number;
}

export interface PodCondition {
  /** PodScheduled, PodReadyToStartContainers, Initialized, ContainersReady, Ready, DisruptionTarget. */
  type: string;
  /** 'True', 'False' or 'Unknown'. */
  status: string;
  reason?: string;
  message?: string;
  lastProbeTime?: Timestamp | null;
  lastTransitionTime?: Timestamp;
}

export interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: Timestamp };
  terminated?: {
    exitCode: number;
    signal?: number;
    reason?: string;
    message?: string;
    startedAt?: Timestamp;
    finishedAt?: Timestamp;
    containerID?: string;
  };
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  ready: boolean;
  restartCount: number;
  started?: boolean;
  containerID?: string;
  state?: ContainerState;
  lastState?: ContainerState;
}

export interface PodStatus {
  /** Pending, Running, Succeeded, Failed, Unknown. */
  phase?: string;
  /** Pod-level reason, e.g. `Evicted`, `UnexpectedAdmissionError`, `NodeAffinity`. */
  reason?: string;
  message?: string;
  conditions?: PodCondition[];
  containerStatuses?: ContainerStatus[];
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: Timestamp;
  qosClass?: string;
}

export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: PodSpec;
  status?: PodStatus;
}

/** A Pod as Corral creates it: every part Corral sets is present. */
export interface PodManifest extends Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: ObjectMeta & {
    name: string;
    namespace: string;
    labels: { [key: string]: string };
    annotations: { [key: string]: string };
  };
  spec: PodSpec;
}

export interface Secret {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  type?: string;
  /** Values are base64. */
  data?: { [key: string]: string };
  immutable?: boolean;
}

export interface SecretManifest extends Secret {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: ObjectMeta & { name: string; namespace: string; labels: { [key: string]: string } };
  type: string;
  data: { [key: string]: string };
}
