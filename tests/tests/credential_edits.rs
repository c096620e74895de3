//! Consumers and displays edited by hand (issue 24; DECISIONS §7's rule for
//! hand edits): a malformed secret list or sections value refuses that one
//! credential, as an unknown one, with a logged reason and never a secret in
//! the log; every other credential works.
//!
//! The edits are made behind the running server's back, as an admin makes
//! them (tests/tests/hand_edits/edits.rs), on SQLite and, with
//! `BLACKBOX_STORE=dynamodb`, on moto.

mod hand_edits {
    // Each suite uses part of the helpers.
    #[allow(dead_code)]
    pub(crate) mod edits;
    #[allow(dead_code)]
    #[path = "../live_aws/moto_api.rs"]
    pub(crate) mod moto_api;
}

use blackbox_tests::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use hand_edits::edits::*;

const REFUSED: &str = "malformed credential refused";

/// The error lines refusing a malformed credential: `(kind, id, field)`.
fn refusals(server: &Server, expected: usize) -> Vec<(String, String, String)> {
    let refused = |lines: &[String]| -> Vec<(String, String, String)> {
        lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| line["message"] == REFUSED)
            .map(|line| {
                assert_eq!(line["level"], "ERROR", "{line}");
                let field = |name: &str| line[name].as_str().expect(name).to_string();
                (field("kind"), field("id"), field("field"))
            })
            .collect()
    };
    refused(&server.logs_once(|lines| refused(lines).len() >= expected))
}

#[tokio::test]
async fn a_consumer_with_malformed_secrets_is_refused_and_the_others_work() {
    const TEXT: &str = "22222222-2222-4333-8444-555555555555";
    const EMPTY: &str = "33333333-2222-4333-8444-555555555555";
    const SECRET: &str = "the-secret-typed-by-hand";
    let server = Server::production(seed().consumer(TEXT, &[SECRET], false).consumer(
        EMPTY,
        &[SECRET],
        false,
    ));
    if on_dynamodb() {
        update_item(
            &server,
            "consumers",
            json!({"id": {"S": TEXT}}),
            &[("secrets", V::S(SECRET))],
        )
        .await;
        // An empty list, which `V` does not type: the console's `[]`.
        moto()
            .call(
                "DynamoDB_20120810.UpdateItem",
                json!({
                    "TableName": format!("{}consumers", server.table_prefix()),
                    "Key": {"id": {"S": EMPTY}},
                    "UpdateExpression": "SET #secrets = :empty",
                    "ExpressionAttributeNames": {"#secrets": "secrets"},
                    "ExpressionAttributeValues": {":empty": {"L": []}}
                }),
            )
            .await;
    } else {
        update_row(
            &server,
            "consumers",
            "id",
            TEXT,
            &[("secrets", V::S(SECRET))],
        );
        update_row(
            &server,
            "consumers",
            "id",
            EMPTY,
            &[("secrets", V::S("[]"))],
        );
    }
    let open = r#"{"event":"Notruf"}"#;
    for id in [TEXT, EMPTY] {
        let response = server
            .display(&Consumer::new(id, SECRET), &address_of("Notruf"), open)
            .await;
        response.expect_status(400);
        assert_eq!(response.text, invalid_hash_body(), "as an unknown consumer");
    }
    server
        .display(&central(), &address_of("Notruf"), open)
        .await
        .expect_status(201);
    assert_eq!(
        refusals(&server, 2),
        [
            (
                "consumer".to_string(),
                TEXT.to_string(),
                "secrets".to_string()
            ),
            (
                "consumer".to_string(),
                EMPTY.to_string(),
                "secrets".to_string()
            ),
        ],
        "one error line per refused request"
    );
    assert!(
        !server.all_output().contains(SECRET),
        "no secret in the log"
    );
    // The admin's list names the item to fix instead of hiding it.
    let listed = server.admin(&["consumers", "list"]);
    assert_eq!(listed.code, Some(3), "{listed:#?}");
    assert!(listed.stderr.contains(TEXT) || listed.stderr.contains(EMPTY));
    assert!(!listed.stderr.contains(SECRET));
}

#[tokio::test]
async fn a_display_with_malformed_sections_is_refused_and_the_others_read() {
    let server = Server::production(seed());
    let create = |name: &str| {
        server
            .admin(&[
                "displays",
                "create",
                "--name",
                name,
                "--section",
                "S1",
                "--json",
            ])
            .success()
            .json()
    };
    let (good, bad) = (create("Flur 1"), create("Flur 2"));
    let token = |display: &Value| display["token"].as_str().expect("token").to_string();
    let bad_id = bad["id"].as_str().expect("id").to_string();
    if on_dynamodb() {
        let key = format!(
            "display#{}",
            hex::encode(Sha256::digest(token(&bad).as_bytes()))
        );
        update_item(
            &server,
            "consumers",
            json!({"id": {"S": key}}),
            &[("sections", V::S("S1"))],
        )
        .await;
    } else {
        update_row(
            &server,
            "displays",
            "id",
            &bad_id,
            &[("sections", V::S("S1"))],
        );
    }
    assert_eq!(
        display_order(&server, &token(&good)).await,
        Vec::<String>::new()
    );
    read_calls(&server, &token(&bad)).await.expect_status(401);
    assert_eq!(
        refusals(&server, 1),
        [(
            "display".to_string(),
            bad_id.clone(),
            "sections".to_string()
        )]
    );
    assert!(
        !server.all_output().contains(&token(&bad)),
        "no token in the log"
    );
    let listed = server.admin(&["displays", "list"]);
    assert_eq!(listed.code, Some(3), "{listed:#?}");
    assert!(listed.stderr.contains(&bad_id), "{}", listed.stderr);
}
