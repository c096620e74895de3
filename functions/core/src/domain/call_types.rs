//! The ten call types a new installation is seeded with (spec 2.5, DECISIONS §7).
//! Priority 1 is the most urgent; Notruf and Flucht come first.

use crate::domain::alarm::Policy;
use crate::domain::model::CallType;

/// `(name, urgency, priority, type, colour, notify, interval s, max loops, sound)`
type Defaults = (
    &'static str,
    &'static str,
    i64,
    &'static str,
    &'static str,
    bool,
    i64,
    i64,
    &'static str,
);

const DEFAULTS: [Defaults; 10] = [
    (
        "Hotelruf",
        "NORMAL",
        6,
        "CALL",
        "#3498db",
        true,
        120,
        3,
        "hotel.mp3",
    ),
    (
        "Geräteruf",
        "NORMAL",
        4,
        "CALL",
        "#9b59b6",
        true,
        60,
        5,
        "device.mp3",
    ),
    (
        "Anwesenheit",
        "NORMAL",
        9,
        "PRESENCE",
        "#27ae60",
        false,
        0,
        0,
        "",
    ),
    (
        "Funkelement-Ruf",
        "NORMAL",
        3,
        "CALL",
        "#f39c12",
        true,
        60,
        5,
        "radio.mp3",
    ),
    (
        "Normalruf",
        "NORMAL",
        3,
        "CALL",
        "#f1c40f",
        true,
        60,
        5,
        "normal.mp3",
    ),
    ("WC", "URGENT", 2, "CALL", "#e67e22", true, 30, 10, "wc.mp3"),
    (
        "Notruf",
        "EMERGENCY",
        1,
        "CALL",
        "#e74c3c",
        true,
        15,
        0,
        "emergency.mp3",
    ),
    (
        "Flucht",
        "EMERGENCY",
        1,
        "CALL",
        "#c0392b",
        true,
        15,
        0,
        "escape.mp3",
    ),
    (
        "Pneumatischer Ruf (REA)",
        "URGENT",
        2,
        "CALL",
        "#d35400",
        true,
        30,
        10,
        "rea.mp3",
    ),
    (
        "Störung",
        "NORMAL",
        5,
        "FAULT",
        "#7f8c8d",
        true,
        300,
        3,
        "fault.mp3",
    ),
];

/// The accept timeout (DECISIONS §19) of a type that has no seeded one,
/// and of a presence (which starts no alarm).
pub(crate) const FALLBACK_ACCEPT_TIMEOUT: i64 = 300;

/// The seeded accept timeout of `name` (DECISIONS §19): the most urgent
/// calls resume soonest when nobody arrives.
pub(crate) fn seeded_accept_timeout(name: &str) -> i64 {
    match name {
        "Notruf" | "Flucht" => 120,
        "WC" | "Pneumatischer Ruf (REA)" => 180,
        "Störung" => 1800,
        _ => FALLBACK_ACCEPT_TIMEOUT,
    }
}

/// The seeded call types, ids 1 to 10, internal names empty.
pub fn default_call_types() -> Vec<CallType> {
    DEFAULTS
        .iter()
        .zip(1..)
        .map(
            |(&(name, urgency, priority, kind, color, notify, interval, maxloops, sound), id)| {
                CallType {
                    id,
                    name: name.to_string(),
                    internal_name: String::new(),
                    urgency: urgency.to_string(),
                    priority,
                    kind: kind.to_string(),
                    color: color.to_string(),
                    notify,
                    notification_interval: interval,
                    notification_maxloops: maxloops,
                    notification_sound: sound.to_string(),
                    escalation: Policy::seeded(name).unwrap_or_else(Policy::fallback),
                    accept_timeout: seeded_accept_timeout(name),
                }
            },
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_the_ten_names_of_the_spec_in_order() {
        let names: Vec<String> = default_call_types().into_iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "Hotelruf",
                "Geräteruf",
                "Anwesenheit",
                "Funkelement-Ruf",
                "Normalruf",
                "WC",
                "Notruf",
                "Flucht",
                "Pneumatischer Ruf (REA)",
                "Störung"
            ]
        );
    }

    #[test]
    fn accept_timeouts_are_seeded_by_urgency() {
        let timeouts: Vec<(String, i64)> = default_call_types()
            .into_iter()
            .map(|t| (t.name, t.accept_timeout))
            .collect();
        let of = |name: &str| timeouts.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!((of("Notruf"), of("Flucht")), (120, 120));
        assert_eq!((of("WC"), of("Pneumatischer Ruf (REA)")), (180, 180));
        for name in ["Normalruf", "Funkelement-Ruf", "Geräteruf", "Hotelruf"] {
            assert_eq!(of(name), 300, "{name}");
        }
        assert_eq!(of("Störung"), 1800);
    }

    #[test]
    fn notruf_and_flucht_are_the_most_urgent() {
        let types = default_call_types();
        let top = types.iter().map(|t| t.priority).min().unwrap();
        let most_urgent: Vec<&str> = types
            .iter()
            .filter(|t| t.priority == top)
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(most_urgent, ["Notruf", "Flucht"]);
    }
}
