/**
 * The models an endpoint names (issue 34): Hugging Face repositories its workers load, fetched once per machine into
 * the model cache before a GPU is held and mounted read-only where the hub's clients look.
 */

export interface ModelRef {
  /** `org/name`, as on the hub. */
  name: string;
  /** A branch, tag, commit or `refs/pr/N`; `main` by default. */
  revision: string;
  /** Only files matching one of these globs (fnmatch, as `snapshot_download`'s `allow_patterns`); empty: every file. */
  allowPatterns: string[];
  /** The owner's secret holding a hub token, for gated and private repositories; null for public ones. */
  tokenSecret: string | null;
}
