/**
 * Whether a header value holds a Corral key: an API key (`sk_<id>_<secret>`), an invoke key (`ik_<id>_<secret>`),
 * the two forms src/crypto issues (the admin key printed at first start is an `sk_` key), or an http job's delivery
 * key (`cjd_<mac>_<endpointId>`, service/delivery-keys.ts), found anywhere in the
 * value, whatever its case or what surrounds it (`Bearer`, a raw key, several credentials joined by commas). The
 * gateway takes such a value off before a request reaches a worker, public endpoint or not (invoke-auth.ts).
 */

/**
 * The shape of both key forms, case-insensitive and unanchored: `BEARER SK_...`, `token=ik_...` and `Bearer x,
 * Bearer sk_...` all match. A key chosen by the operator (CORRAL_API_KEY of another shape) cannot be told from a
 * worker's own token by its form; docs/security.md says so.
 */
const CORRAL_KEY = /(?:sk|ik)_[a-z0-9]{12}_[a-z0-9]{32}|cjd_[a-z0-9_-]{43}_[a-z0-9]/i;

export function holdsCorralKey(value: string): boolean {
  // Every key is at least 47 characters: most values are ruled out without a regex.
  return value.length >= 47 && CORRAL_KEY.test(value);
}
