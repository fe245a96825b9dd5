/**
 * One job as its owner opens it (the dashboard's job detail): the listing's fields with the input, the output and
 * the stream chunks not yet read, each cut to a bound with its full size said, since any of them may be 20 MB.
 */
import type { JobListing } from './job.js';

/** A stored JSON text, perhaps cut: `text` is its first `maxChars` characters when `truncated`. */
export interface ClippedText {
  text: string;
  /** The whole text's size in bytes (UTF-8). */
  bytes: number;
  truncated: boolean;
}

export interface JobDetail extends JobListing {
  input: ClippedText;
  /** null: no output yet (or none at all). */
  output: ClippedText | null;
  /** The chunks the job streamed that no client has read yet (reading the stream consumes them), oldest first. */
  chunks: ClippedText[];
  /** How many such chunks there are in all (`chunks` holds the first of them). */
  chunkCount: number;
}

/** How much of a job's detail is read and shown at most. */
export interface JobDetailBounds {
  /** Characters of the input and of the output. */
  maxChars: number;
  /** Chunks, and the characters of each. */
  maxChunks: number;
  maxChunkChars: number;
}

export const JOB_DETAIL_BOUNDS: JobDetailBounds = {
  maxChars: 64 * 1024,
  maxChunks: 50,
  maxChunkChars: 4 * 1024,
};
