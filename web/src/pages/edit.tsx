/**
 * The Create / Edit page: a form for the endpoint's spec, with ranges and defaults from `GET endpoint/limit`, GPU
 * products (with free counts) from `GET products` and registry credentials by name; an error the API answers is
 * shown at the field it names.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { WireCredential, WireLimits, WireProduct } from '../../../src/client/index.js';
import { CorralApiError } from '../../../src/client/index.js';
import { describeError, useApi } from '../api-context.js';
import { href } from '../route.js';
import {
  type Control,
  defaultForm,
  type FormErrors,
  formErrors,
  formOf,
  inputOf,
  type SpecForm,
} from '../spec-form.js';
import { Notice } from '../widgets.js';

interface Loaded {
  limits: WireLimits;
  products: WireProduct[];
  credentials: WireCredential[];
  form: SpecForm;
  title: string;
}

export function EditPage(props: { id?: string }) {
  const api = useApi();
  const [loaded, setLoaded] = useState<Loaded | undefined>(undefined);
  const [loadError, setLoadError] = useState<string | undefined>(undefined);
  useEffect(() => {
    setLoaded(undefined);
    void (async () => {
      try {
        const [limits, products, credentials, endpoint] = await Promise.all([
          api.call((c) => c.getLimits()),
          api.call((c) => c.listProducts()),
          api.call((c) => c.listCredentials()),
          props.id === undefined ? undefined : api.call((c) => c.getEndpoint(props.id as string)),
        ]);
        setLoaded({
          limits,
          products,
          credentials,
          form: endpoint ? formOf(endpoint) : defaultForm(limits),
          title: endpoint ? endpoint.name || endpoint.appName : '',
        });
      } catch (error) {
        setLoadError(describeError(error));
      }
    })();
  }, [api, props.id]);
  if (!loaded) {
    return <main>{loadError ? <Notice kind="error">{loadError}</Notice> : <p>Loading...</p>}</main>;
  }
  return <SpecEditor id={props.id} loaded={loaded} />;
}

function SpecEditor(props: { id: string | undefined; loaded: Loaded }) {
  const api = useApi();
  const { limits, products, credentials } = props.loaded;
  const [form, setForm] = useState<SpecForm>(props.loaded.form);
  const [errors, setErrors] = useState<FormErrors>({ byControl: {}, general: [] });
  const [busy, setBusy] = useState(false);
  const creating = props.id === undefined;
  const set = (control: Control, value: string | boolean | string[]) =>
    setForm((old) => ({ ...old, [control]: value }));

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setErrors({ byControl: {}, general: [] });
    try {
      const input = inputOf(form, props.loaded.form);
      const id = creating
        ? (await api.call((c) => c.createEndpoint(input))).id
        : (await api.call((c) => c.updateEndpoint(props.id as string, input))).id;
      location.hash = href({ page: 'endpoint', id });
    } catch (error) {
      const found =
        error instanceof CorralApiError
          ? formErrors(error.message, error.metadata)
          : { byControl: {}, general: [describeError(error)] };
      setErrors(found);
      setBusy(false);
      // The first field in error takes the focus, so that a keyboard user lands on it.
      const first = Object.keys(found.byControl)[0];
      if (first) document.getElementById(`f-${first}`)?.focus();
    }
  };

  const field = (control: Control, label: string, input: ComponentChildren, help?: string) => {
    const error = errors.byControl[control];
    return (
      <div class={`field${error ? ' invalid' : ''}`}>
        <label for={`f-${control}`}>{label}</label>
        {input}
        {help ? (
          <p class="help" id={`f-${control}-help`}>
            {help}
          </p>
        ) : null}
        {error ? (
          <p class="field-error" id={`f-${control}-error`} data-field-error={control}>
            {error}
          </p>
        ) : null}
      </div>
    );
  };
  const describedBy = (control: Control, help: boolean) =>
    [help ? `f-${control}-help` : '', errors.byControl[control] ? `f-${control}-error` : '']
      .filter(Boolean)
      .join(' ') || undefined;
  const text = (control: Exclude<Control, 'products' | 'public'>, label: string, help?: string, extra = {}) =>
    field(
      control,
      label,
      <input
        id={`f-${control}`}
        name={control}
        value={form[control]}
        aria-invalid={errors.byControl[control] ? 'true' : undefined}
        aria-describedby={describedBy(control, help !== undefined)}
        onInput={(e) => set(control, e.currentTarget.value)}
        {...extra}
      />,
      help,
    );
  const num = (
    control: Exclude<Control, 'products' | 'public'>,
    label: string,
    min: number,
    max: number,
    def: string,
  ) => text(control, label, `${min} to ${max}; default ${def}`, { inputMode: 'numeric' });
  const defaults = defaultForm(limits);
  const policyRange =
    form.policyType === 'concurrency'
      ? [limits.minRequestNum, limits.maxRequestNum]
      : [limits.minQueueWaitTime, limits.maxQueueWaitTime];

  return (
    <main>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href={href({ page: 'endpoints' })}>Endpoints</a> /{' '}
        {creating ? (
          'New'
        ) : (
          <a href={href({ page: 'endpoint', id: props.id as string })}>{props.loaded.title}</a>
        )}
      </nav>
      <h1>{creating ? 'New endpoint' : `Edit ${props.loaded.title}`}</h1>
      <form onSubmit={submit} noValidate>
        {errors.general.map((message) => (
          <Notice kind="error" key={message}>
            {message}
          </Notice>
        ))}
        {Object.keys(errors.byControl).length > 0 ? (
          <Notice kind="error">The server refused some fields; each says why below it.</Notice>
        ) : null}
        <fieldset>
          <legend>Endpoint</legend>
          {text('name', 'Name', 'For people; at most 220 characters.')}
          {text('appName', 'App name', 'Lowercase letters, digits and -; names the URL. Empty: the id.')}
          {field(
            'type',
            'Type',
            <select
              id="f-type"
              value={form.type}
              aria-describedby={describedBy('type', true)}
              onChange={(e) => set('type', e.currentTarget.value)}
            >
              <option value="http">http: a load-balanced URL (jobs are sent to it as POST /run)</option>
              <option value="queue">queue: RunPod handler images, whose workers pull jobs from /v2</option>
            </select>,
            form.type === 'queue'
              ? 'Jobs through /run and /runsync on /v2; no port or health path needed (a worker is ready at its first poll).'
              : 'Requests to its URL, and jobs through /v2 delivered to it.',
          )}
          <div class="field checkbox">
            <input
              id="f-public"
              type="checkbox"
              checked={form.public}
              onChange={(e) => set('public', e.currentTarget.checked)}
            />
            <label for="f-public">Public: the URL answers without a key</label>
          </div>
        </fieldset>
        <fieldset>
          <legend>Image</legend>
          {text('image', 'Image', 'An image reference, e.g. ghcr.io/you/model:1.', { required: true })}
          {text('command', 'Command', "Empty: the image's own command.")}
          {field(
            'authId',
            'Registry credentials',
            <select id="f-authId" value={form.authId} onChange={(e) => set('authId', e.currentTarget.value)}>
              <option value="">None (a public image)</option>
              {credentials.map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name} ({c.username})
                </option>
              ))}
            </select>,
          )}
          {num('port', 'Port', 1, 65535, '8000')}
        </fieldset>
        <fieldset>
          <legend>Workers</legend>
          <div class="grid">
            {num('minNum', 'Fewest workers', limits.minWorkerNum, limits.maxWorkerNum, defaults.minNum)}
            {num('maxNum', 'Most workers', limits.minWorkerNum, limits.maxWorkerNum, defaults.maxNum)}
            {num('gpuNum', 'GPUs per worker', limits.minGPUNum, limits.maxGPUNum, defaults.gpuNum)}
            {num(
              'maxConcurrent',
              'Requests at once per worker',
              limits.minConcurrencyNum,
              limits.maxConcurrencyNum,
              defaults.maxConcurrent,
            )}
            {num(
              'freeTimeout',
              'Idle seconds before removal',
              limits.minFreeTimeout,
              limits.maxFreeTimeout,
              defaults.freeTimeout,
            )}
            {num(
              'requestTimeout',
              'Request timeout (s)',
              limits.minRequestTimeout,
              limits.maxRequestTimeout,
              defaults.requestTimeout,
            )}
          </div>
          <fieldset class="field choices-set">
            <legend>Idle tiers</legend>
            <div class="grid">
              {text(
                'keepFrozen',
                'Keep frozen (s)',
                'An idle worker past its idle seconds is frozen this long (GPUs held, woken in milliseconds) instead of removed; 0 (default): removed.',
                { inputMode: 'numeric' },
              )}
              {text(
                'keepSuspended',
                'Keep suspended (s)',
                'Then suspended this long (GPU state in host memory, woken in seconds) where the runtime can; 0 (default): never suspended.',
                { inputMode: 'numeric' },
              )}
            </div>
          </fieldset>
          {field(
            'cudaVersion',
            'CUDA version',
            <select
              id="f-cudaVersion"
              value={form.cudaVersion}
              onChange={(e) => set('cudaVersion', e.currentTarget.value)}
            >
              <option value="any">any</option>
              {limits.cudaVersionList.map((v) => (
                <option key={v} value={v}>
                  {v}
                </option>
              ))}
            </select>,
          )}
          <fieldset id="f-products" class={`field choices-set${errors.byControl.products ? ' invalid' : ''}`}>
            <legend>GPU products</legend>
            <div class="choices">
              {products.length === 0 ? <span class="muted">This server has no GPU products.</span> : null}
              {products.map((p) => (
                <label key={p.id} class="choice">
                  <input
                    type="checkbox"
                    name="products"
                    value={p.id}
                    checked={form.products.includes(p.id)}
                    onChange={(e) =>
                      set(
                        'products',
                        e.currentTarget.checked
                          ? [...form.products, p.id]
                          : form.products.filter((x) => x !== p.id),
                      )
                    }
                  />
                  {p.id}{' '}
                  <span class="muted">
                    ({p.gpusFree} of {p.gpusTotal} free)
                  </span>
                </label>
              ))}
            </div>
            <p class="help">None checked: any product.</p>
            {errors.byControl.products ? (
              <p class="field-error" data-field-error="products">
                {errors.byControl.products}
              </p>
            ) : null}
          </fieldset>
        </fieldset>
        <fieldset>
          <legend>Scaling</legend>
          {field(
            'policyType',
            'Policy',
            <select
              id="f-policyType"
              value={form.policyType}
              onChange={(e) => set('policyType', e.currentTarget.value)}
            >
              <option value="queue">
                queue: add workers when the oldest request waits this many seconds
              </option>
              <option value="concurrency">concurrency: add workers when this many requests wait</option>
            </select>,
          )}
          {num('policyValue', 'Policy value', policyRange[0] ?? 0, policyRange[1] ?? 0, '4')}
        </fieldset>
        <fieldset>
          <legend>Health check</legend>
          <div class="grid">
            {text(
              'healthPath',
              'Path',
              "Starts with /. Empty: the type's default (/health on http, none on queue).",
            )}
            {num('initialDelay', 'Initial delay (s)', 0, 3600, '0')}
            {num('period', 'Period (s)', 1, 300, '2')}
            {num('timeout', 'Timeout (s)', 1, 300, '2')}
            {num('successThreshold', 'Successes to pass', 1, 100, '1')}
            {num('failureThreshold', 'Failures to fail', 1, 100, '3')}
          </div>
        </fieldset>
        <fieldset>
          <legend>Environment and storage</legend>
          {field(
            'envs',
            'Environment variables',
            <textarea
              id="f-envs"
              rows={4}
              value={form.envs}
              aria-invalid={errors.byControl.envs ? 'true' : undefined}
              aria-describedby={describedBy('envs', true)}
              onInput={(e) => set('envs', e.currentTarget.value)}
            />,
            'One KEY=value per line; {{ CORRAL_SECRET_name }} in a value is your secret of that name.',
          )}
          {field(
            'volumes',
            'Volumes',
            <textarea
              id="f-volumes"
              rows={2}
              value={form.volumes}
              aria-invalid={errors.byControl.volumes ? 'true' : undefined}
              aria-describedby={describedBy('volumes', true)}
              onInput={(e) => set('volumes', e.currentTarget.value)}
            />,
            `One per line: "local SIZE /path" (${limits.minLocalVolumeSize} to ${limits.maxLocalVolumeSize} GB) or "network ID /path".`,
          )}
          {num(
            'rootfsSize',
            'System disk (GB)',
            limits.minRootfsSize,
            limits.maxRootfsSize,
            String(limits.freeRootfsSize),
          )}
        </fieldset>
        <div class="actions">
          <a
            class="button secondary"
            href={creating ? href({ page: 'endpoints' }) : href({ page: 'endpoint', id: props.id as string })}
          >
            Cancel
          </a>
          <button type="submit" disabled={busy}>
            {busy ? 'Saving...' : creating ? 'Create endpoint' : 'Save changes'}
          </button>
        </div>
      </form>
    </main>
  );
}
