// The spec's words for the API's enum values. Read models carry statuses as
// enums (TurnStatus.WAITING_PERMISSION); the spec, event payloads and human
// output use the word: the value's name in lowercase ("waiting_permission").

/**
 * The word of `value` of a generated enum (`enumWord(TurnStatus, t.status)`
 * is "waiting_permission"): "unspecified" for 0, the number for a value
 * this build does not know.
 */
export function enumWord(e: Record<number, string>, value: number): string {
  const name = e[value];
  return typeof name === "string" ? name.toLowerCase() : String(value);
}
