//! The hand edits of issue 24, each read as DECISIONS §7 says.

use super::*;

fn text(value: &str) -> Raw {
    Raw::Text(value.to_string())
}

fn number(value: impl ToString) -> Raw {
    Raw::Number(value.to_string())
}

fn seeded_items() -> Vec<CallTypeItem> {
    default_call_types()
        .iter()
        .map(CallTypeItem::from)
        .collect()
}

/// The seeded items, `edit` applied to the one named `name`.
fn edited(name: &str, edit: impl FnOnce(&mut CallTypeItem)) -> Vec<CallTypeItem> {
    let mut items = seeded_items();
    let item = items
        .iter_mut()
        .find(|i| i.name == text(name))
        .expect("a seeded name");
    edit(item);
    items
}

/// The seeded items and `item`.
fn with(item: CallTypeItem) -> Vec<CallTypeItem> {
    let mut items = seeded_items();
    items.push(item);
    items
}

/// A new type, complete and valid, named `name` with id `id`.
fn new_type(name: &str, id: Raw) -> CallTypeItem {
    CallTypeItem {
        name: text(name),
        id,
        internal_name: text(""),
        urgency: text("NORMAL"),
        priority: number(4),
        kind: text("CALL"),
        color: text("#123456"),
        notify: Raw::Bool(true),
        notification_interval: number(30),
        notification_maxloops: number(2),
        notification_sound: text("new.mp3"),
        escalation: text(r#"[{"after":0,"to":"house"}]"#),
        accept_timeout: number(240),
    }
}

fn fallback(item: &str, field: &'static str, found: &str, used: &str, problem: &str) -> Fallback {
    Fallback {
        item: item.to_string(),
        field,
        found: found.to_string(),
        used: used.to_string(),
        problem: problem.to_string(),
    }
}

fn named<'a>(read: &'a CallTypesRead, name: &str) -> &'a CallType {
    read.types
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", read.types))
}

/// Every type but `name` exactly as seeded.
fn others_unchanged(read: &CallTypesRead, except: &[&str]) {
    for seeded in default_call_types() {
        if !except.contains(&seeded.name.as_str()) {
            assert_eq!(named(read, &seeded.name), &seeded);
        }
    }
}

#[test]
fn the_seeded_items_read_as_seeded_without_a_fallback() {
    let read = read_items(seeded_items());
    assert_eq!(read.types, default_call_types());
    assert_eq!(read.fallbacks, []);
}

#[test]
fn a_priority_as_text_falls_back_to_the_seeded_priority() {
    let read = read_items(edited("Normalruf", |i| i.priority = text("high")));
    assert_eq!(named(&read, "Normalruf").priority, 3);
    assert_eq!(
        read.fallbacks,
        [fallback(
            "Normalruf",
            "priority",
            "\"high\"",
            "3",
            "text, not a number"
        )]
    );
    others_unchanged(&read, &[]);
}

#[test]
fn a_colour_name_and_notify_as_text_fall_back_to_the_seeded_colour_and_true() {
    let read = read_items(edited("WC", |i| {
        i.color = text("red");
        i.notify = text("yes");
    }));
    let wc = named(&read, "WC");
    assert_eq!((wc.color.as_str(), wc.notify), ("#e67e22", true));
    assert_eq!(
        read.fallbacks,
        [
            fallback("WC", "color", "\"red\"", "\"#e67e22\"", "not #rrggbb"),
            fallback("WC", "notify", "\"yes\"", "true", "text, not true/false"),
        ]
    );
    others_unchanged(&read, &["WC"]);
}

#[test]
fn notify_false_as_stored_is_kept_and_only_a_non_boolean_falls_back() {
    let read = read_items(edited("WC", |i| i.notify = Raw::Bool(false)));
    assert!(!named(&read, "WC").notify);
    assert_eq!(read.fallbacks, []);
    let read = read_items(edited("Anwesenheit", |i| i.notify = number(0)));
    assert!(named(&read, "Anwesenheit").notify, "never silenced");
}

#[test]
fn a_new_type_without_an_id_gets_a_stable_id_of_its_own() {
    let read = read_items(with(new_type("Sonderruf", Raw::Missing)));
    let id = named(&read, "Sonderruf").id;
    assert!((GENERATED_FROM..=MAX_SAFE).contains(&id), "{id}");
    assert_eq!(id, generated_id("Sonderruf", &HashSet::new()));
    // Fixed: the same in every process and every release (SHA-256).
    assert_eq!(id, 5_039_500_813_178_697);
    assert_eq!(
        read.fallbacks,
        [fallback(
            "Sonderruf",
            "id",
            "missing",
            &id.to_string(),
            "missing"
        )]
    );
    others_unchanged(&read, &[]);
    // Listed last: ordered by id.
    assert_eq!(read.types.last().map(|t| t.id), Some(id));
}

#[test]
fn a_new_type_with_notrufs_id_gets_its_own_and_notruf_keeps_7() {
    // "Aaa" sorts before "Notruf": the seeded name keeps its id anyway.
    for name in ["Aaa", "Zzz"] {
        let read = read_items(with(new_type(name, number(7))));
        assert_eq!(named(&read, "Notruf").id, 7);
        let own = named(&read, name).id;
        assert_eq!(own, generated_id(name, &HashSet::new()));
        assert_eq!(read.types.iter().filter(|t| t.id == 7).count(), 1);
        assert_eq!(
            read.fallbacks,
            [fallback(
                name,
                "id",
                "7",
                &own.to_string(),
                "taken by \"Notruf\""
            )]
        );
        others_unchanged(&read, &[]);
    }
}

#[test]
fn of_two_new_types_with_one_id_the_first_by_name_keeps_it() {
    let mut items = with(new_type("Beta", number(40)));
    items.push(new_type("Alpha", number(40)));
    let read = read_items(items);
    assert_eq!(named(&read, "Alpha").id, 40);
    assert_ne!(named(&read, "Beta").id, 40);
    assert_eq!(read.fallbacks[0].problem, "taken by \"Alpha\"");
}

#[test]
fn an_id_and_a_priority_of_ten_to_the_twentieth_fall_back_below_notruf() {
    let mut item = new_type("Riesig", number("100000000000000000000"));
    item.priority = number("100000000000000000000");
    let read = read_items(with(item));
    let riesig = named(&read, "Riesig");
    assert_eq!(riesig.id, generated_id("Riesig", &HashSet::new()));
    assert_eq!(riesig.priority, FALLBACK_PRIORITY);
    assert!(riesig.priority > named(&read, "Notruf").priority);
    let range = format!("out of range (1 to {MAX_SAFE})");
    assert_eq!(
        read.fallbacks,
        [
            fallback(
                "Riesig",
                "id",
                "100000000000000000000",
                &riesig.id.to_string(),
                &range
            ),
            fallback("Riesig", "priority", "100000000000000000000", "5", &range),
        ]
    );
}

#[test]
fn a_priority_of_0_or_below_would_outrank_notruf_and_falls_back() {
    for stored in ["0", "-3"] {
        let read = read_items(edited("Hotelruf", |i| i.priority = number(stored)));
        assert_eq!(named(&read, "Hotelruf").priority, 6);
        assert_eq!(read.fallbacks.len(), 1);
    }
}

#[test]
fn a_blank_or_empty_name_is_skipped_and_said() {
    for name in [" ", "", "\t"] {
        let read = read_items(with(new_type(name, number(11))));
        assert_eq!(read.types, default_call_types());
        let quoted = serde_json::to_string(name).unwrap();
        assert_eq!(
            read.fallbacks,
            [fallback(name, "name", &quoted, SKIPPED, "blank")]
        );
    }
    let read = read_items(
        with(new_type("x", number(11)))
            .into_iter()
            .map(|mut i| {
                if i.name == text("x") {
                    i.name = number(5);
                }
                i
            })
            .collect(),
    );
    assert_eq!(read.types, default_call_types());
    assert_eq!(
        read.fallbacks,
        [fallback("", "name", "5", SKIPPED, "a number, not text")]
    );
}

#[test]
fn a_new_type_with_nothing_but_a_name_gets_the_generic_fail_safe_values() {
    let read = read_items(with(CallTypeItem::from_fields(|field| match field {
        "name" => text("Leer"),
        _ => Raw::Missing,
    })));
    let leer = named(&read, "Leer");
    assert_eq!(
        (
            leer.internal_name.as_str(),
            leer.urgency.as_str(),
            leer.priority,
            leer.kind.as_str(),
            leer.color.as_str(),
            leer.notify,
            leer.notification_interval,
            leer.notification_maxloops,
            leer.notification_sound.as_str()
        ),
        ("", "NORMAL", 5, "CALL", "#808080", true, 60, 0, "")
    );
    let fields: Vec<&str> = read.fallbacks.iter().map(|f| f.field).collect();
    assert_eq!(
        fields,
        [
            "id",
            "internal_name",
            "urgency",
            "priority",
            "type",
            "color",
            "notify",
            "notification_interval",
            "notification_maxloops",
            "notification_sound",
            "escalation"
        ]
    );
    assert!(read.fallbacks.iter().all(|f| f.found == "missing"));
}

#[test]
fn a_seeded_name_stripped_bare_gets_its_seeded_values_and_id() {
    let read = read_items(edited("Notruf", |i| {
        *i = CallTypeItem::from_fields(|field| match field {
            "name" => text("Notruf"),
            _ => Raw::Missing,
        })
    }));
    let mut notruf = default_call_types()[6].clone();
    // Only notify is not the seeded value: always true.
    notruf.notify = true;
    assert_eq!(named(&read, "Notruf"), &notruf);
    assert_eq!(
        read.fallbacks[0],
        fallback("Notruf", "id", "missing", "7", "missing")
    );
}

#[test]
fn urgency_and_type_must_be_one_word() {
    let read = read_items(edited("WC", |i| {
        i.urgency = text("");
        i.kind = text("TWO WORDS");
    }));
    let wc = named(&read, "WC");
    assert_eq!((wc.urgency.as_str(), wc.kind.as_str()), ("URGENT", "CALL"));
    let problems: Vec<&str> = read.fallbacks.iter().map(|f| f.problem.as_str()).collect();
    assert_eq!(problems, ["not one word", "not one word"]);
}

#[test]
fn the_read_does_not_depend_on_the_order_of_the_items() {
    let mut items = with(new_type("Sonderruf", Raw::Missing));
    items.push(new_type("Extra", number(7)));
    items.push(new_type(" ", Raw::Missing));
    let read = read_items(items.clone());
    items.reverse();
    assert_eq!(read_items(items), read);
}

#[test]
fn a_generated_id_that_is_taken_moves_to_the_next_free_one() {
    let first = generated_id("Sonderruf", &HashSet::new());
    let taken: HashSet<i64> = [first, first + 1].into();
    assert_eq!(generated_id("Sonderruf", &taken), first + 2);
}

#[test]
fn colours_are_hash_and_six_hex_digits_in_either_case() {
    assert!(is_rrggbb("#e74c3c") && is_rrggbb("#E74C3C"));
    for bad in [
        "e74c3c",
        "#e74c3",
        "#e74c3cc",
        "#g74c3c",
        "red",
        "",
        "rgb(1,2,3)",
    ] {
        assert!(!is_rrggbb(bad), "{bad}");
    }
}

#[test]
fn escalation_missing_is_the_seeded_policy_and_invalid_is_the_fallback() {
    use crate::domain::alarm::Policy;
    let mut seeded_missing = CallTypeItem::from(&default_call_types()[0]);
    seeded_missing.escalation = Raw::Missing;
    let mut invalid = new_type("Kaputt", number(40));
    invalid.escalation = text(r#"[{"after":9,"to":"house"}]"#);
    let mut unseeded_missing = new_type("Neu", number(41));
    unseeded_missing.escalation = Raw::Missing;
    let read = read_items(vec![seeded_missing.clone(), invalid, unseeded_missing]);
    let of = |name: &str| {
        read.types
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .escalation
            .clone()
    };
    let seeded_name = seeded_missing.name.as_text().unwrap();
    assert_eq!(of(seeded_name), Policy::seeded(seeded_name).unwrap());
    assert_eq!(of("Kaputt"), Policy::fallback());
    assert_eq!(of("Neu"), Policy::fallback());
    let noted: Vec<(&str, &str)> = read
        .fallbacks
        .iter()
        .filter(|f| f.field == "escalation")
        .map(|f| (f.item.as_str(), f.problem.as_str()))
        .collect();
    assert_eq!(
        noted,
        [
            ("Kaputt", "the first level must have after 0"),
            ("Neu", "missing")
        ]
    );
}

#[test]
fn an_accept_timeout_missing_reads_the_seeded_one_and_an_unusable_one_falls_back_noted() {
    // Missing (stored before accept timeouts): the seeded value, or 300,
    // without a fallback line (DECISIONS §19).
    let mut notruf = CallTypeItem::from(
        &default_call_types()
            .into_iter()
            .find(|t| t.name == "Notruf")
            .unwrap(),
    );
    notruf.accept_timeout = Raw::Missing;
    let mut custom = new_type("Sonderruf", number(40));
    custom.accept_timeout = Raw::Missing;
    let read = read_items(vec![notruf.clone(), custom]);
    assert_eq!(read.fallbacks, []);
    let of = |read: &CallTypesRead, name: &str| {
        read.types
            .iter()
            .find(|t| t.name == name)
            .unwrap()
            .accept_timeout
    };
    assert_eq!((of(&read, "Notruf"), of(&read, "Sonderruf")), (120, 300));

    // Text, zero, more than a day: the same values, noted.
    for (raw, found, problem) in [
        (text("soon"), "\"soon\"", "text, not a number"),
        (number(0), "0", "out of range (1 to 86400)"),
        (number(86_401), "86401", "out of range (1 to 86400)"),
    ] {
        notruf.accept_timeout = raw;
        let read = read_items(vec![notruf.clone()]);
        assert_eq!(of(&read, "Notruf"), 120);
        assert_eq!(
            read.fallbacks,
            [fallback("Notruf", "accept_timeout", found, "120", problem)]
        );
    }
    // A number in range is taken.
    notruf.accept_timeout = number(2);
    let read = read_items(vec![notruf]);
    assert_eq!((of(&read, "Notruf"), read.fallbacks.len()), (2, 0));
}
