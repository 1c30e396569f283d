// One JSON object a line on stdout, with enum numbers spelled as their proto names.
import { lockModeToJSON } from '../../gen/holdfast/v1/lock';

export function printJson(message: object): void {
  const line = JSON.stringify(message, (key, value) => (key === 'mode' && typeof value === 'number' ? lockModeToJSON(value) : value));
  process.stdout.write(`${line}\n`);
}
