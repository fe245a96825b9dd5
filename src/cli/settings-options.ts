/** The serve settings table (config/settings.ts) as commander options, for `corral serve` and `corral keys`. */
import { Option } from 'commander';
import { SERVE_SETTINGS, type ServeSettingName } from '../config/settings.js';

/** Commander options for the named settings, with help that names the environment variable and default. */
export function settingOptions(names: readonly ServeSettingName[]): Option[] {
  return names.map((name) => {
    const setting = SERVE_SETTINGS[name];
    const fallback = setting.default === undefined ? '' : `, default ${setting.default}`;
    const value = 'switch' in setting ? '' : ' <value>';
    return new Option(`${setting.flag}${value}`, `${setting.help} [${setting.env}${fallback}]`);
  });
}

/** Keeps only the flags the user gave (commander leaves the others undefined; a switch given is `true`). */
export function givenFlags(options: Record<string, unknown>): Partial<Record<ServeSettingName, string>> {
  return Object.fromEntries(
    Object.entries(options)
      .filter(([name, value]) => name in SERVE_SETTINGS && (typeof value === 'string' || value === true))
      .map(([name, value]) => [name, String(value)]),
  );
}
