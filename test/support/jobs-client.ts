/** A call to the jobs client routes (`/v2/{endpoint}/{path}`) on a gateway, with a key: the status and JSON body. */
export async function callJobs(
  gatewayUrl: string,
  key: string,
  request: { method: string; endpoint: string; path: string; body?: unknown },
): Promise<{ status: number; body: Record<string, any> }> {
  const response = await fetch(`${gatewayUrl}/v2/${request.endpoint}/${request.path}`, {
    method: request.method,
    headers: { authorization: `Bearer ${key}` },
    ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
  });
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Record<string, any> };
}
