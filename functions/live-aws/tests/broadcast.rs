//! The broadcast handler on the recorded batch (tests/fixtures/
//! stream-batch.json), with DynamoDB and the management API mocked
//! (aws-smithy-mocks): who gets which message in which order, gone and
//! failing connections, throttled posts, poison records, and what Lambda is
//! told to retry when DynamoDB fails.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_sdk_apigatewaymanagement::operation::post_to_connection::{
    PostToConnectionError, PostToConnectionOutput,
};
use aws_sdk_apigatewaymanagement::types::error::ForbiddenException;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemOutput;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::operation::scan::ScanOutput;
use aws_smithy_mocks::{Rule, mock};
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use serde_json::{Value, json};

use nurse_call_core::Mode;
use nurse_call_live_aws::broadcast::{Broadcaster, Tally};
use nurse_call_live_aws::connections::Connections;
use nurse_call_live_aws::poster::Poster;
use support::*;

type Api = aws_sdk_apigatewaymanagement::Client;
type Db = aws_sdk_dynamodb::Client;
type HttpResponse = aws_sdk_apigatewaymanagement::config::http::HttpResponse;

const SANDBOX: &str = "0b6d2c1e-3f4a-4b5c-8d6e-7f8091a2b3c4";

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/stream-batch.json")).unwrap()
}

/// The fixture's records named `ids`, in this order, as one event.
fn batch(ids: &[&str]) -> Value {
    let records = fixture()["Records"].as_array().unwrap().clone();
    let picked: Vec<Value> = ids
        .iter()
        .map(|id| {
            records
                .iter()
                .find(|record| record["eventID"] == *id)
                .unwrap_or_else(|| panic!("no record {id}"))
                .clone()
        })
        .collect();
    json!({ "Records": picked })
}

fn sequence_of(id: &str) -> String {
    fixture()["Records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["eventID"] == id)
        .unwrap()["dynamodb"]["SequenceNumber"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every post the management API received: (connection id, message type).
#[derive(Clone, Default)]
struct Posts(Arc<Mutex<Vec<(String, Value)>>>);

impl Posts {
    fn record(&self, id: &str, data: &[u8]) {
        let message = serde_json::from_slice(data).expect("a JSON message");
        self.0.lock().unwrap().push((id.to_string(), message));
    }

    /// The message types `id` received, in order.
    fn types_to(&self, id: &str) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|(to, _)| to == id)
            .map(|(_, message)| message["type"].as_str().unwrap().to_string())
            .collect()
    }

    fn all(&self) -> Vec<(String, Value)> {
        self.0.lock().unwrap().clone()
    }
}

/// Accepts every post to the connections in `ids` and records it.
fn accepting(posts: &Posts, ids: &'static [&'static str]) -> Rule {
    let posts = posts.clone();
    mock!(Api::post_to_connection)
        .match_requests(move |request| ids.contains(&request.connection_id().unwrap_or_default()))
        .then_compute_output(move |request| {
            posts.record(
                request.connection_id().unwrap(),
                request.data().unwrap().as_ref(),
            );
            PostToConnectionOutput::builder().build()
        })
}

fn call_types() -> Rule {
    mock!(Db::scan).then_output(|| {
        ScanOutput::builder()
            .set_items(Some(call_type_items()))
            .build()
    })
}

/// The connections of `scope` (a consistent Query of the connections table).
fn connections_of(
    scope: &'static str,
    items: Vec<(&'static str, &'static [&'static str])>,
) -> Rule {
    mock!(Db::query)
        .match_requests(move |query| {
            query.table_name() == Some(CONNECTIONS_TABLE)
                && query.consistent_read() == Some(true)
                && query
                    .expression_attribute_values()
                    .and_then(|values| values.get(":scope"))
                    .and_then(|value| value.as_s().ok())
                    .is_some_and(|value| value == scope)
        })
        .then_output(move || {
            QueryOutput::builder()
                .set_items(Some(
                    items
                        .iter()
                        .map(|(id, sections)| connection_item(scope, id, sections))
                        .collect(),
                ))
                .build()
        })
}

/// A DeleteItem of connection `id` in `scope`.
fn deletion_of(scope: &'static str, id: &'static str) -> Rule {
    mock!(Db::delete_item)
        .match_requests(move |delete| {
            delete.table_name() == Some(CONNECTIONS_TABLE)
                && delete.key().and_then(|key| key.get("scope")) == Some(&s(scope))
                && delete.key().and_then(|key| key.get("connection_id")) == Some(&s(id))
        })
        .then_output(|| DeleteItemOutput::builder().build())
}

fn broadcaster(db: &Db, api: Api) -> Broadcaster {
    Broadcaster::new(
        state(db, Mode::Production),
        Connections::new(db.clone(), CONNECTIONS_TABLE),
        Poster::new(api),
    )
}

/// An error answer of the management API, as API Gateway sends it.
fn api_error(status: u16, code: &str) -> HttpResponse {
    let mut response = HttpResponse::new(
        StatusCode::try_from(status).unwrap(),
        SdkBody::from(format!(r#"{{"message":"{code}"}}"#)),
    );
    response
        .headers_mut()
        .insert("x-amzn-errortype", code.to_string());
    response
}

fn failures(response: &aws_lambda_events::streams::DynamoDbEventResponse) -> Vec<String> {
    response
        .batch_item_failures
        .iter()
        .map(|failure| failure.item_identifier.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn each_connection_gets_its_scopes_messages_in_write_order_filtered_by_section() {
    let posts = Posts::default();
    let api = management(&[&accepting(&posts, &["all", "ward-2", "visitor"])]);
    let types = call_types();
    let installation = connections_of("installation", vec![("all", &[]), ("ward-2", &["S2"])]);
    let sandbox = connections_of(SANDBOX, vec![("visitor", &[])]);
    let db = dynamodb(&[&types, &installation, &sandbox]);

    let (response, tally) = broadcaster(&db, api)
        .broadcast(fixture().into(), None)
        .await;

    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(
        posts.types_to("all"),
        ["call.opened", "element.updated", "call.closed"]
    );
    // Its sections are S2: the call in S1 is not for it, the element (no
    // section) is.
    assert_eq!(posts.types_to("ward-2"), ["element.updated"]);
    // The sandbox visitor gets its own element only, never the installation's.
    assert_eq!(posts.types_to("visitor"), ["element.updated"]);
    let to_visitor = posts
        .all()
        .into_iter()
        .find(|(to, _)| to == "visitor")
        .unwrap()
        .1;
    assert_eq!(to_visitor["element"]["address"], "Flur-2");
    assert_eq!(
        tally,
        Tally {
            records: 12,
            changes: 4,
            poison: 1,
            delivered: 5,
            gone: 0,
            failed_posts: 0,
            closed: 0,
        }
    );
    // A scope's connections are read once per batch, the call types once.
    assert_eq!(installation.num_calls(), 1);
    assert_eq!(sandbox.num_calls(), 1);
    assert_eq!(types.num_calls(), 1);
}

#[tokio::test]
async fn a_gone_connection_is_deleted_once_and_gets_nothing_more_while_others_do() {
    let posts = Posts::default();
    let gone = mock!(Api::post_to_connection)
        .match_requests(|request| request.connection_id() == Some("gone"))
        .then_http_response(|| api_error(410, "GoneException"));
    let api = management(&[&accepting(&posts, &["alive"]), &gone]);
    let types = call_types();
    let installation = connections_of("installation", vec![("gone", &[]), ("alive", &[])]);
    let deleted = deletion_of("installation", "gone");
    let db = dynamodb(&[&types, &installation, &deleted]);

    let batch = batch(&["call-opened", "element-battery", "call-closed"]);
    let (response, tally) = broadcaster(&db, api).broadcast(batch.into(), None).await;

    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(
        posts.types_to("alive"),
        ["call.opened", "element.updated", "call.closed"]
    );
    assert_eq!(
        gone.num_calls(),
        1,
        "410 is final: not retried, not posted to again"
    );
    assert_eq!(deleted.num_calls(), 1, "its item is deleted");
    assert_eq!((tally.delivered, tally.gone), (3, 1));
}

#[tokio::test]
async fn a_throttled_post_is_retried_by_the_sdk_then_delivered() {
    let posts = Posts::default();
    let recorder = posts.clone();
    // API Gateway's throttling: 429 LimitExceededException, then accepted.
    let throttled = mock!(Api::post_to_connection)
        .sequence()
        .http_response(|| api_error(429, "LimitExceededException"))
        .output(move || {
            recorder.record("busy", br#"{"type":"delivered after a retry"}"#);
            PostToConnectionOutput::builder().build()
        })
        .build();
    let api = management(&[&throttled]);
    let types = call_types();
    let installation = connections_of("installation", vec![("busy", &[])]);
    let db = dynamodb(&[&types, &installation]);

    let (response, tally) = broadcaster(&db, api)
        .broadcast(batch(&["call-opened"]).into(), None)
        .await;

    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(throttled.num_calls(), 2, "the SDK retried the 429");
    assert_eq!(posts.types_to("busy"), ["delivered after a retry"]);
    assert_eq!((tally.delivered, tally.failed_posts), (1, 0));
}

#[tokio::test]
async fn a_failing_connection_never_fails_the_batch() {
    let posts = Posts::default();
    // One refuses every post (403), one keeps failing (500 after retries).
    let forbidden = mock!(Api::post_to_connection)
        .match_requests(|request| request.connection_id() == Some("forbidden"))
        .then_error(|| {
            PostToConnectionError::ForbiddenException(ForbiddenException::builder().build())
        });
    let broken = mock!(Api::post_to_connection)
        .match_requests(|request| request.connection_id() == Some("broken"))
        .then_http_response(|| api_error(500, "InternalServerErrorException"));
    let api = management(&[&accepting(&posts, &["fine"]), &forbidden, &broken]);
    let types = call_types();
    let installation = connections_of(
        "installation",
        vec![("forbidden", &[]), ("broken", &[]), ("fine", &[])],
    );
    let db = dynamodb(&[&types, &installation]);

    let batch = batch(&["call-opened", "call-closed"]);
    let (response, tally) = broadcaster(&db, api).broadcast(batch.into(), None).await;

    assert_eq!(failures(&response), Vec::<String>::new());
    assert_eq!(posts.types_to("fine"), ["call.opened", "call.closed"]);
    assert_eq!(
        broken.num_calls(),
        2 * 3,
        "a 5xx is retried, 3 attempts per post"
    );
    assert_eq!(forbidden.num_calls(), 2, "a 403 is not retried");
    assert_eq!((tally.delivered, tally.failed_posts, tally.gone), (2, 4, 0));
}

#[tokio::test]
async fn a_poison_record_is_skipped_and_the_records_after_it_are_delivered() {
    let posts = Posts::default();
    let api = management(&[&accepting(&posts, &["all"])]);
    let types = call_types();
    let installation = connections_of("installation", vec![("all", &[])]);
    let db = dynamodb(&[&types, &installation]);
    // The fixture's poison (a call item without a usable id), and a record
    // that is not even a stream record.
    let mut batch = batch(&["poison", "call-opened", "call-closed"]);
    batch["Records"]
        .as_array_mut()
        .unwrap()
        .insert(1, json!({"eventName": "INSERT", "dynamodb": "garbage"}));

    let (response, tally) = broadcaster(&db, api).broadcast(batch.into(), None).await;

    assert_eq!(
        failures(&response),
        Vec::<String>::new(),
        "nothing to retry"
    );
    assert_eq!(posts.types_to("all"), ["call.opened", "call.closed"]);
    assert_eq!(tally.poison, 2);
}

#[tokio::test]
async fn when_dynamodb_fails_the_record_is_reported_and_nothing_after_it_is_sent() {
    let posts = Posts::default();
    let api = management(&[&accepting(&posts, &["all", "visitor"])]);
    let types = call_types();
    let installation = connections_of("installation", vec![("all", &[])]);
    // The sandbox scope's connections cannot be read: throttled, every attempt.
    let throttled = mock!(Db::query)
        .match_requests(|query| {
            query
                .expression_attribute_values()
                .and_then(|values| values.get(":scope"))
                == Some(&s(SANDBOX))
        })
        .sequence()
        .http_status(500, None)
        .times(10)
        .build();
    let db = dynamodb(&[&types, &installation, &throttled]);

    let batch = batch(&["element-battery", "sandbox-element-created", "call-closed"]);
    let (response, _) = broadcaster(&db, api).broadcast(batch.into(), None).await;

    assert_eq!(
        failures(&response),
        [sequence_of("sandbox-element-created")],
        "Lambda retries from the record that failed"
    );
    assert_eq!(throttled.num_calls(), 3, "after the SDK's retries");
    // Sent before the failure; the close after it waits for the retry, so
    // that no display sees it before the sandbox element.
    assert_eq!(posts.types_to("all"), ["element.updated"]);
    assert_eq!(posts.types_to("visitor"), Vec::<String>::new());
}

#[tokio::test]
async fn when_the_call_types_cannot_be_read_the_call_is_reported() {
    let posts = Posts::default();
    let api = management(&[&accepting(&posts, &["all"])]);
    let down = mock!(Db::scan)
        .sequence()
        .http_status(503, None)
        .times(10)
        .build();
    let installation = connections_of("installation", vec![("all", &[])]);
    let db = dynamodb(&[&down, &installation]);

    let batch = batch(&["element-battery", "call-opened", "call-closed"]);
    let (response, _) = broadcaster(&db, api).broadcast(batch.into(), None).await;

    assert_eq!(failures(&response), [sequence_of("call-opened")]);
    assert_eq!(posts.types_to("all"), ["element.updated"]);
}

#[tokio::test]
async fn near_the_deadline_the_rest_of_the_batch_is_left_to_lambda() {
    let posts = Posts::default();
    let api = management(&[&accepting(&posts, &["all"])]);
    let types = call_types();
    let installation = connections_of("installation", vec![("all", &[])]);
    let db = dynamodb(&[&types, &installation]);

    let deadline = SystemTime::now() + Duration::from_secs(2);
    let batch = batch(&["call-opened", "element-battery", "call-closed"]);
    let (response, _) = broadcaster(&db, api)
        .broadcast(batch.into(), Some(deadline))
        .await;

    // The first record always goes (progress), the rest is retried.
    assert_eq!(posts.types_to("all"), ["call.opened"]);
    assert_eq!(failures(&response), [sequence_of("element-battery")]);
}

#[tokio::test]
async fn the_response_is_lambdas_partial_batch_shape() {
    let api = management(&[]);
    let down = mock!(Db::query)
        .sequence()
        .http_status(503, None)
        .times(10)
        .build();
    let db = dynamodb(&[&down]);
    let response = broadcaster(&db, api)
        .handle(batch(&["element-battery"]).into(), None)
        .await;
    assert_eq!(
        serde_json::to_value(&response).unwrap(),
        json!({"batchItemFailures": [{"itemIdentifier": sequence_of("element-battery")}]})
    );
}

/// The stream record of a credential marker (DECISIONS §20, written with a
/// rotate or revoke): `holder` is `staff_id` or `display_id`.
fn credential_gone(sequence: &str, scope: &str, holder: &str, id: &str) -> Value {
    let kind = holder.trim_end_matches("_id");
    let sk = format!("{kind}#{id}#1767603600000#0000002a");
    json!({
        "eventID": format!("gone-{id}"),
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "eu-central-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1767603600,
            "Keys": { "pk": { "S": "credential#gone" }, "sk": { "S": sk } },
            "NewImage": {
                "pk": { "S": "credential#gone" }, "sk": { "S": sk },
                "scope": { "S": scope }, holder: { "S": id },
                "ttl": { "N": "1767607200" }
            },
            "SequenceNumber": sequence,
            "SizeBytes": 120,
            "StreamViewType": "NEW_AND_OLD_IMAGES"
        },
        "eventSourceARN": "arn:aws:dynamodb:eu-central-1:123456789012:table/nurse-call-heim-data/stream/2026-01-05T08:00:00.000"
    })
}

#[tokio::test]
async fn a_rotated_or_revoked_credentials_connections_are_closed_and_only_theirs() {
    let closed = Arc::new(Mutex::new(Vec::<String>::new()));
    let closing = {
        let closed = Arc::clone(&closed);
        mock!(Api::delete_connection).then_compute_output(move |request| {
            closed
                .lock()
                .unwrap()
                .push(request.connection_id().unwrap().to_string());
            aws_sdk_apigatewaymanagement::operation::delete_connection::DeleteConnectionOutput::builder().build()
        })
    };
    let api = management(&[&closing]);
    // Anna's two pages and Ben's; the display "flur" and another one.
    let installation = mock!(Db::query)
        .match_requests(|query| query.table_name() == Some(CONNECTIONS_TABLE))
        .then_output(|| {
            let with = |id: &str, attribute: &str, holder: &str| {
                let mut item = connection_item("installation", id, &[]);
                item.insert(attribute.to_string(), s(holder));
                item
            };
            QueryOutput::builder()
                .set_items(Some(vec![
                    with("anna-phone", "staff_id", "anna"),
                    with("anna-tablet", "staff_id", "anna"),
                    with("ben-phone", "staff_id", "ben"),
                    with("flur", "display_id", "d-flur"),
                    with("kueche", "display_id", "d-kueche"),
                ]))
                .build()
        });
    let deleted = mock!(Db::delete_item)
        .match_requests(|delete| delete.table_name() == Some(CONNECTIONS_TABLE))
        .then_output(|| DeleteItemOutput::builder().build());
    let db = dynamodb(&[&installation, &deleted]);

    let batch = json!({ "Records": [
        credential_gone("1", "installation", "staff_id", "anna"),
        credential_gone("2", "installation", "display_id", "d-flur"),
    ]});
    let (response, tally) = broadcaster(&db, api).broadcast(batch.into(), None).await;

    assert_eq!(failures(&response), Vec::<String>::new());
    let mut closed = closed.lock().unwrap().clone();
    closed.sort();
    assert_eq!(closed, ["anna-phone", "anna-tablet", "flur"]);
    assert_eq!(deleted.num_calls(), 3, "their items are deleted");
    assert_eq!((tally.changes, tally.closed, tally.delivered), (2, 3, 0));
    assert_eq!(installation.num_calls(), 1, "read once per batch");
}
