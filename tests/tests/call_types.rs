//! `GET /api/v1/display/call-types` (spec 2.5, 4.3; DECISIONS §4, §7).

use blackbox_tests::*;
use reqwest::Method;

fn expected_body() -> String {
    let entries: Vec<String> = CALL_TYPE_NAMES
        .iter()
        .map(|name| format!(r#"{}:"""#, json_string(name)))
        .collect();
    format!(r#"{{"success":true,"data":{{{}}}}}"#, entries.join(","))
}

#[tokio::test]
async fn lists_the_ten_names_with_empty_internal_names_without_credentials() {
    let server = Server::sandbox();
    let response = server.get(CALL_TYPES).await;
    response.expect_status(200);
    assert_eq!(response.text, expected_body());
    assert_eq!(response.header("cache-control"), Some("max-age=60"));
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(object_keys(&response.raw_data()), CALL_TYPE_NAMES);
}

#[tokio::test]
async fn the_spec_request_with_content_type_and_a_body_is_fine() {
    let server = Server::sandbox();
    let response = server
        .request(
            Method::GET,
            CALL_TYPES,
            Some("application/json"),
            &[],
            Vec::new(),
        )
        .await;
    response.expect_status(200);
    assert_eq!(response.text, expected_body());
    // A query string changes nothing.
    let response = server.get(&format!("{CALL_TYPES}?consumer=x")).await;
    response.expect_status(200);
    assert_eq!(response.text, expected_body());
}

#[tokio::test]
async fn production_lists_them_too() {
    let server = Server::production(Seed::new());
    let response = server.get(CALL_TYPES).await;
    response.expect_status(200);
    assert_eq!(response.text, expected_body());
    assert_eq!(response.header("cache-control"), Some("max-age=60"));
}
