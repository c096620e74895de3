//! `nurse-call-admin staff …` and `call-types set … --escalation` as
//! processes (DECISIONS §14), on the embedded store and on DynamoDB (moto):
//! a staff token is printed once with its page link and only its SHA-256 is
//! kept; rotate, revoke and erase do what they say, an unknown id is refused
//! with exit status 1; the list shows each person's phones and "Telefon
//! stumm" for one on duty whose phones are all silent (DECISIONS §18); an
//! escalation policy is set, shown, and refused with the reason when
//! invalid.
//!
//! For the DynamoDB cases moto on PATH (scripts/test sets it up).

#[macro_use]
mod support;

use chrono::{Duration, Utc};

use nurse_call_core::{Scope, alarm::Duty, push::PushSubscription, tokens::token_hash};
use support::{Backend, Value, json};

on_both_stores!(
    staff_are_issued_listed_rotated_revoked_and_erased,
    staff_refusals_exit_non_zero_and_write_nothing,
    escalation_policies_are_set_shown_and_refused,
);

fn text(value: &Value) -> String {
    value
        .as_str()
        .unwrap_or_else(|| panic!("not a string: {value}"))
        .to_string()
}

fn is_token(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

async fn staff_are_issued_listed_rotated_revoked_and_erased(store: Backend) {
    let kept = store.open().await;
    let created = store.admin_json(&[
        "staff",
        "create",
        "--name",
        " Anna K. ",
        "--group",
        "Leitung",
        "--group",
        "Nacht",
        "--device",
        "DECT 4711",
        "--json",
    ]);
    let id = text(&created["id"]);
    let token = text(&created["token"]);
    assert!(is_token(&token), "{created}");
    assert_eq!(
        created,
        json!({"id": id, "name": "Anna K.", "groups": ["Leitung", "Nacht"],
               "device": "DECT 4711", "token": token, "page": format!("/staff#token={token}")})
    );
    // Only the token's SHA-256 is kept.
    let stored = kept
        .staff_by_token_hash(&token_hash(&token))
        .await
        .unwrap()
        .expect("found by the token's hash");
    assert_eq!(
        (stored.id.as_str(), stored.scope.clone(), stored.revoked),
        (id.as_str(), Scope::installation(), false)
    );
    assert_eq!(stored.token_hash, token_hash(&token));
    assert!(kept.staff_by_token_hash(&token).await.unwrap().is_none());

    // For people: the token once on stdout, with the page, and the note.
    let run = store.admin(&["staff", "create", "--name", "Ben"]).success();
    let ben_token = run
        .stdout
        .lines()
        .find_map(|line| line.strip_prefix("token"))
        .map(str::trim)
        .unwrap_or_else(|| panic!("no token line: {run:#?}"));
    assert!(is_token(ben_token), "{run:#?}");
    assert_eq!(
        run.stdout.matches(ben_token).count(),
        2,
        "token and page: {run:#?}"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("page") && l.ends_with(&format!("/staff#token={ben_token}"))),
        "{run:#?}"
    );
    assert!(run.stderr.contains("shown only now"), "{run:#?}");

    // The list: ordered by name, never a token or its hash; a duty shows.
    kept.put_duty(&Duty {
        staff_id: id.clone(),
        scope: Scope::installation(),
        sections: vec!["Station 1".into()],
        since: Utc::now() - Duration::minutes(5),
        until: Utc::now() + Duration::hours(1),
    })
    .await
    .unwrap();
    let listed = store.admin_json(&["staff", "list", "--json"]);
    let rows = listed.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{listed}");
    assert_eq!(
        (rows[0]["name"].clone(), rows[1]["name"].clone()),
        (json!("Anna K."), json!("Ben"))
    );
    assert_eq!(rows[0]["id"], id);
    assert_eq!(rows[0]["groups"], json!(["Leitung", "Nacht"]));
    assert_eq!(rows[0]["device"], "DECT 4711");
    assert_eq!(rows[0]["duty"]["sections"], json!(["Station 1"]));
    assert_eq!(rows[1]["duty"], Value::Null);
    assert_eq!(rows[0]["revoked"], false);
    for secret in [&token, &token_hash(&token), &ben_token.to_string()] {
        assert!(!listed.to_string().contains(secret.as_str()), "{listed}");
    }
    let table = store.admin(&["staff", "list"]).success().stdout;
    assert!(table.starts_with("ID"), "{table}");
    assert!(
        table.contains("ON DUTY") && table.contains("Station 1"),
        "{table}"
    );

    // Her phone (DECISIONS §18): tested five minutes ago, no receipt since:
    // silent, and she is on duty: "Telefon stumm". Ben has no phone.
    let endpoint = "https://push.example/anna-phone";
    kept.put_push_subscription(&PushSubscription {
        staff_id: id.clone(),
        scope: Scope::installation(),
        endpoint: endpoint.into(),
        p256dh: "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY".into(),
        auth: "auth".into(),
        created_at: Utc::now() - Duration::minutes(20),
    })
    .await
    .unwrap();
    let tested = Utc::now() - Duration::minutes(5);
    assert!(
        kept.record_device_push(&id, endpoint, tested, true)
            .await
            .unwrap()
    );
    let listed = store.admin_json(&["staff", "list", "--json"]);
    let (anna, ben) = (&listed[0], &listed[1]);
    assert_eq!(anna["phone_silent"], true, "{listed}");
    assert_eq!(
        anna["devices"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    assert_eq!(anna["devices"][0]["state"], "silent", "{listed}");
    assert_eq!(anna["devices"][0]["last_receipt_at"], Value::Null);
    assert!(
        !anna["devices"].to_string().contains(endpoint),
        "never the endpoint: {listed}"
    );
    assert_eq!(
        (ben["phone_silent"].clone(), ben["devices"].clone()),
        (json!(false), json!([]))
    );
    let table = store.admin(&["staff", "list"]).success().stdout;
    assert!(
        table.contains("PHONES") && table.contains("Telefon stumm"),
        "{table}"
    );
    // Within RECEIPT_SECONDS of the test it might still answer: waiting.
    let patient = store.admin_json(&["staff", "list", "--json", "--receipt-seconds", "600"]);
    assert_eq!(patient[0]["devices"][0]["state"], "waiting", "{patient}");
    assert_eq!(patient[0]["phone_silent"], false, "{patient}");
    // Its receipt: confirmed, no longer mute.
    assert!(
        kept.record_device_receipt(&id, endpoint, Utc::now())
            .await
            .unwrap()
    );
    let listed = store.admin_json(&["staff", "list", "--json"]);
    assert_eq!(listed[0]["devices"][0]["state"], "confirmed", "{listed}");
    assert_eq!(listed[0]["phone_silent"], false, "{listed}");
    let table = store.admin(&["staff", "list"]).success().stdout;
    assert!(!table.contains("Telefon stumm"), "{table}");

    // Rotation: the new token is found, the old one at once no longer.
    let rotated = store.admin_json(&["staff", "rotate", &id, "--json"]);
    let new_token = text(&rotated["token"]);
    assert!(is_token(&new_token) && new_token != token, "{rotated}");
    assert_eq!(rotated["page"], format!("/staff#token={new_token}"));
    assert!(
        kept.staff_by_token_hash(&token_hash(&token))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        kept.staff_by_token_hash(&token_hash(&new_token))
            .await
            .unwrap()
            .is_some()
    );

    // Revocation: kept for the list, marked; the duty ends; no new token.
    let revoked = store.admin_json(&["staff", "revoke", &id.to_uppercase(), "--json"]);
    assert_eq!(
        (revoked["id"].clone(), revoked["revoked"].clone()),
        (json!(id), json!(true))
    );
    let member = kept.staff_member(&id).await.unwrap().expect("still listed");
    assert!(member.revoked);
    let duties = kept
        .duties(&Scope::installation(), Utc::now())
        .await
        .unwrap();
    assert!(duties.iter().all(|d| d.staff_id != id), "{duties:?}");
    store
        .admin(&["staff", "rotate", &id])
        .fails(1, "is revoked");

    // Erasure: gone from the store and the list; a second time is refused.
    let erased = store.admin_json(&["staff", "erase", &id, "--json"]);
    assert_eq!(erased, json!({"id": id, "erased": true}));
    assert!(kept.staff_member(&id).await.unwrap().is_none());
    let names: Vec<String> = store
        .admin_json(&["staff", "list", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .map(|s| text(&s["name"]))
        .collect();
    assert_eq!(names, ["Ben"]);
    store
        .admin(&["staff", "erase", &id])
        .fails(1, &format!("no staff member with id {id}"));
}

async fn staff_refusals_exit_non_zero_and_write_nothing(store: Backend) {
    let kept = store.open().await;
    let unknown = "6f1c7d2e-5a8b-4c3d-9e0f-1a2b3c4d5e6f";
    for command in ["rotate", "revoke", "erase"] {
        store
            .admin(&["staff", command, unknown])
            .fails(1, &format!("no staff member with id {unknown}"));
        store
            .admin(&["staff", command, "anna"])
            .fails(1, "is not a staff id");
    }
    store
        .admin(&["staff", "create", "--name", "  "])
        .fails(1, "--name is empty");
    store
        .admin(&[
            "staff",
            "create",
            "--name",
            "Anna",
            "--group",
            "Lei\u{7}tung",
        ])
        .fails(1, "--group contains a control character");
    store
        .admin(&["staff", "create", "--name", "Anna", "--device", "\u{1b}[2J"])
        .fails(1, "--device contains a control character");
    store.admin(&["staff", "create"]).fails(2, "--name");
    assert!(
        kept.staff_of(&Scope::installation())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.admin_json(&["staff", "list", "--json"]), json!([]));
    assert_eq!(store.admin(&["staff", "list"]).success().stdout, "(none)\n");
}

async fn escalation_policies_are_set_shown_and_refused(store: Backend) {
    let _kept = store.open().await;
    let short =
        r#"[{"after":0,"to":"section"},{"after":2,"to":"house"},{"after":4,"to":"group:Leitung"}]"#;
    let set = store.admin_json(&[
        "call-types",
        "set",
        "Notruf",
        "--escalation",
        short,
        "--json",
    ]);
    let levels = json!([{"after": 0, "to": "section"}, {"after": 2, "to": "house"},
                        {"after": 4, "to": "group:Leitung"}]);
    assert_eq!(
        (set["created"].clone(), set["escalation"].clone()),
        (json!(false), levels.clone())
    );
    // Only the policy changed.
    let shown = store.admin_json(&["call-types", "show", "Notruf", "--json"]);
    assert_eq!(shown["escalation"], levels);
    assert_eq!(
        (
            shown["priority"].clone(),
            shown["notification_interval"].clone()
        ),
        (json!(1), json!(15))
    );
    let people = store
        .admin(&["call-types", "show", "Notruf"])
        .success()
        .stdout;
    assert!(people.contains("LEVEL  AFTER  ALERTS"), "{people}");
    assert!(people.contains("3      4 s    group:Leitung"), "{people}");
    let table = store.admin(&["call-types", "list"]).success().stdout;
    assert!(table.contains("ESCALATION"), "{table}");
    assert!(
        table.contains("section 0 s · house 2 s · group:Leitung 4 s"),
        "{table}"
    );
    assert!(
        table.contains("Anwesenheit") && table.contains(" none"),
        "{table}"
    );

    // Invalid policies are refused with the reason; nothing is written.
    for (policy, reason) in [
        (
            r#"[{"after":5,"to":"section"}]"#,
            "the first level must have after 0",
        ),
        (
            r#"[{"after":0,"to":"station"}]"#,
            r#"level 1: "station" is not section, house or group:<name>"#,
        ),
        ("section, house", "not a list of levels"),
    ] {
        let run = store
            .admin(&["call-types", "set", "Notruf", "--escalation", policy])
            .fails(1, reason);
        assert!(
            run.stderr.contains("--escalation is not a valid policy"),
            "{run:#?}"
        );
    }
    let after = store.admin_json(&["call-types", "show", "Notruf", "--json"]);
    assert_eq!(after["escalation"], levels);
    // A hand edit would fall back; the command's edits never do.
    store.admin(&["call-types", "check"]).success();

    // No alarm at all for a type: an empty list.
    let none = store.admin_json(&[
        "call-types",
        "set",
        "Hotelruf",
        "--escalation",
        "[]",
        "--json",
    ]);
    assert_eq!(none["escalation"], json!([]));
    let people = store
        .admin(&["call-types", "show", "Hotelruf"])
        .success()
        .stdout;
    assert!(people.contains("No alarm"), "{people}");
    store
        .admin(&["call-types", "show", "Unbekannt"])
        .fails(1, "no call type named \"Unbekannt\"");
}
