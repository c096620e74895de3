//! The quality report's read on DynamoDB (issue 14): the calls of a span are
//! read with `Query` on the `by_scope` index, page by page, never with a
//! `Scan` of the data table, so a month costs a bounded number of requests.
//! Counted by an SDK interceptor that records each operation sent, on moto
//! (which pages at 1 MB like DynamoDB).

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use chrono::{Duration, TimeZone, Utc};

use nurse_call_core::{
    AddressSnapshot, AdminStore, ElementChange, ElementPolicy, ElementWrite, NewCall, OpenOutcome,
    Scope, Store, default_call_types,
};
use nurse_call_dynamodb::{DynamoStore, RequestCounter, TableNames, Timeouts, sdk_config};
use store_conformance::moto;

/// The `X-Amz-Target` operation of every request sent (`Query`, `Scan`, …),
/// and the index a query named.
#[derive(Debug, Clone, Default)]
struct Operations(Arc<Mutex<Vec<String>>>);

impl Intercept for Operations {
    fn name(&self) -> &'static str {
        "Operations"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let target = request
            .headers()
            .get("x-amz-target")
            .unwrap_or_default()
            .trim_start_matches("DynamoDB_20120810.")
            .to_string();
        let body = request.body().bytes().unwrap_or_default();
        let index = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|b| b["IndexName"].as_str().map(str::to_string));
        let entry = match index {
            Some(index) => format!("{target} {index}"),
            None => target,
        };
        self.0.lock().unwrap().push(entry);
        Ok(())
    }
}

impl Operations {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

async fn store() -> (DynamoStore, Operations) {
    let config = sdk_config(Some(&moto::endpoint()), Timeouts::SLOW_STAND_IN).await;
    let operations = Operations::default();
    let requests = RequestCounter::default();
    let client = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&config)
            .interceptor(requests.clone())
            .interceptor(operations.clone())
            .build(),
    );
    let store = DynamoStore::new(
        client,
        TableNames::with_prefix(&moto::unique_prefix()),
        requests,
    );
    store.create_missing_tables().await.unwrap();
    store.seed_call_types(&default_call_types()).await.unwrap();
    (store, operations)
}

/// A text of some 20 kB. The store keeps what it is given (the API limits
/// texts to 255 characters), so a few calls of 100 kB fill a 1 MB page: the
/// paging is exercised with 25 writes, not 2,500 (moto copies a table on
/// every transaction, so its writes slow down as the table grows).
fn long(prefix: &str, n: usize) -> String {
    format!("{prefix}{n:05}{}", "x".repeat(20_000))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_span_is_read_by_paged_queries_on_the_index_never_by_a_scan() {
    let (store, operations) = store().await;
    let scope = Scope::installation();
    let start = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
    // About 100 kB per call item: 1 MB holds some 10, so 25 calls in the
    // span take three pages; two more calls lie outside it.
    const IN_SPAN: usize = 25;
    let opened = |n: usize| start + Duration::minutes(n as i64);
    let mut times: Vec<_> = (0..IN_SPAN).map(opened).collect();
    times.push(start - Duration::seconds(1));
    times.push(opened(IN_SPAN));
    for (n, at) in times.iter().enumerate() {
        let address = format!("Zimmer-{n}");
        let call = NewCall {
            address: address.clone(),
            event: "Normalruf".into(),
            position: Some(long("Bett ", n)),
            section: Some(long("Station ", n % 3)),
            attribute: Some(long("a", n)),
            element_code: long("Z", n),
            element_name: long("Zimmer ", n),
            opened_at: *at,
            opened_by: Some("aaaaaaaa-0000-4000-8000-00000000000a".into()),
        };
        let change = ElementChange {
            address,
            battery: None,
            position: None,
            reachable: None,
            at: *at,
        };
        let outcome = store
            .open_call(
                &call,
                &AddressSnapshot::default(),
                &ElementWrite::new(
                    &scope,
                    &change,
                    ElementPolicy::CreateMissing,
                    &AddressSnapshot::default(),
                ),
            )
            .await
            .unwrap();
        assert!(matches!(outcome, OpenOutcome::Opened(_)));
    }
    operations.take();

    let calls = store
        .calls_opened_between(&scope, start, opened(IN_SPAN))
        .await
        .unwrap();
    let sent = operations.take();

    assert_eq!(calls.len(), IN_SPAN, "every call of the span, none outside");
    assert!(
        calls.windows(2).all(|w| w[0].opened_at < w[1].opened_at),
        "in opening order"
    );
    assert_eq!(calls[0].opened_at, start);
    assert!(
        sent.iter().all(|op| op == "Query by_scope"),
        "only queries of the index: {sent:?}"
    );
    // 2.5 MB of items: a page per started megabyte (paging works and is
    // followed to the end), plus at most one empty last page.
    assert!(
        (3..=4).contains(&sent.len()),
        "{} requests for {IN_SPAN} calls: {sent:?}",
        sent.len()
    );
}
