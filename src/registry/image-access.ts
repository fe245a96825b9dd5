/**
 * Who may run an image (pure): what to ask the registry for a reference and the local image it names, and the
 * verdict from the registry's answers, the caller's role and the operator's allowance for local-only images.
 */
import {
  formatReference,
  type ImageReference,
  parseImageReference,
  patternMatches,
  repositoryName,
} from './image-reference.js';
import type { ManifestResult } from './manifest-check.js';

/** The engine's facts about an image present on this machine. */
export interface LocalImage {
  id: string;
  /** `repo@sha256:...` for each registry the image was pulled from or pushed to; empty for a local build. */
  repoDigests: string[];
}

/** Which local-only images (built here, never pulled) non-admins may run: none, all, or those named. */
export type LocalImageAllowance = 'admins' | 'all' | readonly string[];

/** When the check runs: at create/update (the API answers 400) or before a worker starts (the worker fails). */
export type CheckPoint = 'create' | 'start';

export type AccessPlan =
  /** Not a reference the registry could be asked about; the pull (or the engine) will say what is wrong. */
  | { kind: 'unparsable' }
  /** Absent at a start: the pull itself, with the owner's credentials, is the check. */
  | { kind: 'pull-decides' }
  | { kind: 'local-only' }
  /** Allowed when the registry lets the owner pull any of these (credentials go only to `loginRegistry`). */
  | { kind: 'registry'; refs: ImageReference[]; loginRegistry: string };

/** `private-registry`: the registry is on a private address the operator has not listed (registry-guard.ts). */
export type ImageDenial = 'unauthorized' | 'not-found' | 'local-only' | 'unverifiable' | 'private-registry';

export type ImageAccessVerdict =
  | {
      allowed: true /** False when no registry could confirm it (accepted at create, checked at start). */;
      verified: boolean;
    }
  | { allowed: false; cause: ImageDenial; message: string };

/** What must be asked, given the image as the endpoint names it and what the engine has under that name. */
export function planAccessCheck(image: string, local: LocalImage | undefined, at: CheckPoint): AccessPlan {
  const ref = parseImageReference(image);
  if (!ref) return { kind: 'unparsable' };
  if (!local)
    return at === 'start'
      ? { kind: 'pull-decides' }
      : { kind: 'registry', refs: [ref], loginRegistry: ref.registry };
  const origins = uniqueByRepository(
    local.repoDigests.map(parseImageReference).filter((r): r is ImageReference => r !== undefined),
  );
  if (origins.length === 0) return { kind: 'local-only' };
  // A name of the repository it came from is checked as named; a local alias (another tag, an image id) of a
  // pulled image is checked against where the image came from, so that no alias reaches a private image.
  const named = origins.some((o) => repositoryName(o) === repositoryName(ref));
  return { kind: 'registry', refs: named ? [ref] : origins, loginRegistry: ref.registry };
}

export interface DecisionInput {
  image: string;
  plan: AccessPlan;
  at: CheckPoint;
  /** The registry's answer for each of plan.refs, in order (empty for the other plans). */
  results: readonly ManifestResult[];
  admin: boolean;
  allowLocal: LocalImageAllowance;
}

/** The verdict; messages name the image and say what the owner or the operator can do. */
export function decideImageAccess(input: DecisionInput): ImageAccessVerdict {
  const { image, plan, at, results } = input;
  switch (plan.kind) {
    case 'unparsable':
    case 'pull-decides':
      return { allowed: true, verified: false };
    case 'local-only':
      if (input.admin || localAllowed(input.allowLocal, image)) return { allowed: true, verified: true };
      return {
        allowed: false,
        cause: 'local-only',
        message:
          `image ${image} exists only on this server (built here, never pulled from a registry): ` +
          'only admins may run it unless the operator allows it (--allow-local-images)',
      };
    case 'registry':
      return registryVerdict(image, plan.refs, results, at);
  }
}

function registryVerdict(
  image: string,
  refs: readonly ImageReference[],
  results: readonly ManifestResult[],
  at: CheckPoint,
): ImageAccessVerdict {
  if (results.some((r) => r.kind === 'found')) return { allowed: true, verified: true };
  // Nothing was sent to a refused registry: its answer is the same whatever listens there.
  const refused = results.find((r) => r.kind === 'refused');
  if (refused) return { allowed: false, cause: 'private-registry', message: refused.reason };
  const where = refs.map(formatReference).join(', ');
  const denied = results.find((r) => r.kind === 'denied');
  if (denied) {
    return {
      allowed: false,
      cause: 'unauthorized',
      message: denied.withLogin
        ? `registry refused owner's credentials for image ${image} (HTTP ${denied.status} for ${where})`
        : `image ${image} is private: the registry refused an anonymous pull (HTTP ${denied.status} for ${where}); ` +
          'save credentials that can pull it (repository/auth/save) and set image.authId',
    };
  }
  if (results.length > 0 && results.every((r) => r.kind === 'not-found')) {
    return {
      allowed: false,
      cause: 'not-found',
      message: `image ${image} cannot be pulled: the registry has no such image or tag (${where})`,
    };
  }
  if (at === 'create') return { allowed: true, verified: false };
  const unreachable = results.find((r) => r.kind === 'unreachable');
  return {
    allowed: false,
    cause: 'unverifiable',
    message:
      `cannot check that the owner may pull image ${image}: ${unreachable?.detail ?? 'no registry answered'}; ` +
      'retried with the backoff of a failed start',
  };
}

function localAllowed(allowance: LocalImageAllowance, image: string): boolean {
  if (allowance === 'all') return true;
  if (allowance === 'admins') return false;
  return allowance.some((pattern) => patternMatches(pattern, image));
}

function uniqueByRepository(refs: ImageReference[]): ImageReference[] {
  const seen = new Map<string, ImageReference>();
  for (const ref of refs) if (!seen.has(repositoryName(ref))) seen.set(repositoryName(ref), ref);
  return [...seen.values()];
}
