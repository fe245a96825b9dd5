/** A path to the bench worker that the proxy figures measure: direct, through the gateway, nginx or the reference. */
export interface Path {
  name: string;
  port: number;
  host?: string;
  /** The proxy's processes (none for direct). */
  proxyPids: () => number[];
}
