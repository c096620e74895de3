//! DynamoDB, DynamoDB Streams and SQS on moto, spoken as raw JSON over HTTP (the
//! black-box suite links no AWS SDK): the connections table as the stack
//! makes it, its items, and the data table's stream read the way Lambda's
//! event source mapping reads it (DescribeStream, GetShardIterator,
//! GetRecords), its records handed on in the shape Lambda delivers.

use std::time::Duration;

use serde_json::{Value, json};

pub(crate) struct Moto {
    endpoint: String,
    region: String,
    client: reqwest::Client,
}

impl Moto {
    /// moto at `endpoint`, in `region` (moto keeps tables per region: the
    /// one the local server and the functions use).
    pub(crate) fn new(endpoint: &str, region: &str) -> Moto {
        Moto {
            endpoint: endpoint.to_string(),
            region: region.to_string(),
            client: reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("HTTP client"),
        }
    }

    /// One JSON-protocol call of DynamoDB (`DynamoDB_20120810.Scan`, …);
    /// panics with moto's answer on an error.
    pub(crate) async fn call(&self, target: &str, body: Value) -> Value {
        self.call_service("dynamodb", target, body).await
    }

    /// One JSON-protocol call of `service` (`dynamodb`, `sqs`: moto reads
    /// the service and the region from the credential scope; it checks no
    /// signature); panics with moto's answer on an error.
    pub(crate) async fn call_service(&self, service: &str, target: &str, body: Value) -> Value {
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential=local/20260105/{}/{service}/aws4_request, \
             SignedHeaders=host;x-amz-target, Signature=0",
            self.region
        );
        let response = self
            .client
            .post(&self.endpoint)
            .header("content-type", "application/x-amz-json-1.0")
            .header("x-amz-target", target)
            .header("authorization", authorization)
            .body(body.to_string())
            .send()
            .await
            .unwrap_or_else(|e| panic!("{target} does not reach moto: {e}"));
        let status = response.status();
        let text = response.text().await.expect("moto's answer");
        assert!(status.is_success(), "{target}: {status} {text}");
        if text.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{target}: not JSON ({e}): {text}"))
    }

    /// The connections table of CONTRACT-13: `scope`/`connection_id`, the
    /// `by_connection` index (keys only), TTL on `ttl`.
    pub(crate) async fn create_connections_table(&self, name: &str) {
        self.call(
            "DynamoDB_20120810.CreateTable",
            json!({
                "TableName": name,
                "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": [
                    {"AttributeName": "scope", "AttributeType": "S"},
                    {"AttributeName": "connection_id", "AttributeType": "S"}
                ],
                "KeySchema": [
                    {"AttributeName": "scope", "KeyType": "HASH"},
                    {"AttributeName": "connection_id", "KeyType": "RANGE"}
                ],
                "GlobalSecondaryIndexes": [{
                    "IndexName": "by_connection",
                    "KeySchema": [{"AttributeName": "connection_id", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}
                }]
            }),
        )
        .await;
        self.call(
            "DynamoDB_20120810.UpdateTimeToLive",
            json!({
                "TableName": name,
                "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "ttl"}
            }),
        )
        .await;
    }

    /// Turns on the stack's stream of the data table (new and old images).
    /// Tables made locally have none: nothing reads it there, and moto
    /// copies a table with all its stream records for every item of every
    /// transaction, which grows slower with each write.
    pub(crate) async fn enable_stream(&self, table: &str) {
        self.call(
            "DynamoDB_20120810.UpdateTable",
            json!({
                "TableName": table,
                "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
            }),
        )
        .await;
    }

    /// Every item of `table` (a small table: one page).
    pub(crate) async fn items(&self, table: &str) -> Vec<Value> {
        let answer = self
            .call(
                "DynamoDB_20120810.Scan",
                json!({"TableName": table, "ConsistentRead": true}),
            )
            .await;
        answer["Items"].as_array().cloned().unwrap_or_default()
    }

    pub(crate) async fn drop_table(&self, table: &str) {
        self.call("DynamoDB_20120810.DeleteTable", json!({"TableName": table}))
            .await;
    }
}

/// A reader of a table's stream from the moment it was made (LATEST), like
/// an event source mapping with starting position LATEST.
pub(crate) struct StreamReader<'a> {
    moto: &'a Moto,
    arn: String,
    iterator: String,
}

impl<'a> StreamReader<'a> {
    pub(crate) async fn latest(moto: &'a Moto, table: &str) -> StreamReader<'a> {
        let table_description = moto
            .call(
                "DynamoDB_20120810.DescribeTable",
                json!({"TableName": table}),
            )
            .await;
        let table_description = &table_description["Table"];
        assert_eq!(
            table_description["StreamSpecification"],
            json!({"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}),
            "the data table streams as in the stack"
        );
        let arn = table_description["LatestStreamArn"]
            .as_str()
            .expect("the data table has a stream")
            .to_string();
        let stream = moto
            .call(
                "DynamoDBStreams_20120810.DescribeStream",
                json!({"StreamArn": arn}),
            )
            .await;
        let shards = stream["StreamDescription"]["Shards"]
            .as_array()
            .expect("shards");
        assert_eq!(shards.len(), 1, "moto keeps one shard per table");
        let iterator = moto
            .call(
                "DynamoDBStreams_20120810.GetShardIterator",
                json!({
                    "StreamArn": arn,
                    "ShardId": shards[0]["ShardId"],
                    "ShardIteratorType": "LATEST"
                }),
            )
            .await["ShardIterator"]
            .as_str()
            .expect("an iterator")
            .to_string();
        StreamReader {
            moto,
            arn,
            iterator,
        }
    }

    /// The records written since the last read, as Lambda's event
    /// `{"Records":[…]}` (Lambda adds the stream's ARN to each record).
    pub(crate) async fn next_event(&mut self) -> Value {
        let mut records = Vec::new();
        loop {
            let answer = self
                .moto
                .call(
                    "DynamoDBStreams_20120810.GetRecords",
                    json!({"ShardIterator": self.iterator, "Limit": 1000}),
                )
                .await;
            self.iterator = answer["NextShardIterator"]
                .as_str()
                .expect("a next iterator")
                .to_string();
            let page = answer["Records"].as_array().cloned().unwrap_or_default();
            if page.is_empty() {
                break;
            }
            records.extend(page.into_iter().map(|mut record| {
                record["eventSourceARN"] = json!(self.arn);
                record
            }));
        }
        json!({ "Records": records })
    }
}
