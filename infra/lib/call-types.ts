/**
 * The ten call types a new installation is seeded with (spec 2.5,
 * DECISIONS §7): the same defaults as `functions/core/src/domain/call_types.rs`
 * (a test compares the two). Priority 1 is the most urgent; ids 1 to 10 in
 * this order; internal names start empty.
 */
export interface CallTypeDefaults {
  readonly id: number;
  readonly name: string;
  readonly urgency: string;
  readonly priority: number;
  readonly type: string;
  readonly color: string;
  readonly notify: boolean;
  /** Seconds between notifications. */
  readonly notificationInterval: number;
  readonly notificationMaxloops: number;
  readonly notificationSound: string;
}

type Row = [string, string, number, string, string, boolean, number, number, string];

// (name, urgency, priority, type, colour, notify, interval s, max loops, sound)
const ROWS: Row[] = [
  ['Hotelruf', 'NORMAL', 6, 'CALL', '#3498db', true, 120, 3, 'hotel.mp3'],
  ['Geräteruf', 'NORMAL', 4, 'CALL', '#9b59b6', true, 60, 5, 'device.mp3'],
  ['Anwesenheit', 'NORMAL', 9, 'PRESENCE', '#27ae60', false, 0, 0, ''],
  ['Funkelement-Ruf', 'NORMAL', 3, 'CALL', '#f39c12', true, 60, 5, 'radio.mp3'],
  ['Normalruf', 'NORMAL', 3, 'CALL', '#f1c40f', true, 60, 5, 'normal.mp3'],
  ['WC', 'URGENT', 2, 'CALL', '#e67e22', true, 30, 10, 'wc.mp3'],
  ['Notruf', 'EMERGENCY', 1, 'CALL', '#e74c3c', true, 15, 0, 'emergency.mp3'],
  ['Flucht', 'EMERGENCY', 1, 'CALL', '#c0392b', true, 15, 0, 'escape.mp3'],
  ['Pneumatischer Ruf (REA)', 'URGENT', 2, 'CALL', '#d35400', true, 30, 10, 'rea.mp3'],
  ['Störung', 'NORMAL', 5, 'FAULT', '#7f8c8d', true, 300, 3, 'fault.mp3'],
];

export const DEFAULT_CALL_TYPES: readonly CallTypeDefaults[] = ROWS.map(
  ([name, urgency, priority, type, color, notify, interval, maxloops, sound], index) => ({
    id: index + 1,
    name,
    urgency,
    priority,
    type,
    color,
    notify,
    notificationInterval: interval,
    notificationMaxloops: maxloops,
    notificationSound: sound,
  }),
);

/**
 * The call type as a DynamoDB item (attribute-value JSON), with the
 * attribute names and types the functions read
 * (`functions/store-dynamodb/src/item.rs`, docs/data-model.md).
 */
export function callTypeItem(t: CallTypeDefaults): Record<string, Record<string, string | boolean>> {
  return {
    name: { S: t.name },
    id: { N: String(t.id) },
    internal_name: { S: '' },
    urgency: { S: t.urgency },
    priority: { N: String(t.priority) },
    type: { S: t.type },
    color: { S: t.color },
    notify: { BOOL: t.notify },
    notification_interval: { N: String(t.notificationInterval) },
    notification_maxloops: { N: String(t.notificationMaxloops) },
    notification_sound: { S: t.notificationSound },
  };
}
