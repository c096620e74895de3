//! SQS on moto for the alarm function's test (raw JSON protocol, as
//! `live_aws::moto_api` speaks DynamoDB): the timer queue with its
//! dead-letter queue as the stack makes them (a shorter visibility and
//! fewer receives, so that a poison message lands there in seconds), and
//! Lambda's SQS event source mapping: receive, hand the messages over in
//! Lambda's event shape, delete those not reported failed.

use serde_json::{Value, json};

use crate::live_aws::moto_api::Moto;

pub(crate) struct Queue<'a> {
    moto: &'a Moto,
    pub url: String,
    pub arn: String,
}

impl<'a> Queue<'a> {
    /// A standard queue `name` with `attributes` (SQS's, as strings).
    pub(crate) async fn create(moto: &'a Moto, name: &str, attributes: Value) -> Queue<'a> {
        let created = moto
            .call_service(
                "sqs",
                "AmazonSQS.CreateQueue",
                json!({"QueueName": name, "Attributes": attributes}),
            )
            .await;
        let url = created["QueueUrl"]
            .as_str()
            .expect("a queue URL")
            .to_string();
        let described = moto
            .call_service(
                "sqs",
                "AmazonSQS.GetQueueAttributes",
                json!({"QueueUrl": url, "AttributeNames": ["QueueArn"]}),
            )
            .await;
        let arn = described["Attributes"]["QueueArn"]
            .as_str()
            .expect("the queue's ARN")
            .to_string();
        Queue { moto, url, arn }
    }

    pub(crate) async fn send(&self, body: &str, delay_seconds: u32) {
        self.moto
            .call_service(
                "sqs",
                "AmazonSQS.SendMessage",
                json!({"QueueUrl": self.url, "MessageBody": body, "DelaySeconds": delay_seconds}),
            )
            .await;
    }

    /// The messages visible now (at most 10), each received once more.
    pub(crate) async fn receive(&self) -> Vec<Value> {
        let answer = self
            .moto
            .call_service(
                "sqs",
                "AmazonSQS.ReceiveMessage",
                json!({
                    "QueueUrl": self.url,
                    "MaxNumberOfMessages": 10,
                    "WaitTimeSeconds": 0,
                    "AttributeNames": ["All"]
                }),
            )
            .await;
        answer["Messages"].as_array().cloned().unwrap_or_default()
    }

    pub(crate) async fn delete(&self, receipt_handle: &str) {
        self.moto
            .call_service(
                "sqs",
                "AmazonSQS.DeleteMessage",
                json!({"QueueUrl": self.url, "ReceiptHandle": receipt_handle}),
            )
            .await;
    }

    /// `messages` (ReceiveMessage's) as Lambda's SQS event.
    pub(crate) fn lambda_event(&self, messages: &[Value]) -> Value {
        let records: Vec<Value> = messages
            .iter()
            .map(|message| {
                json!({
                    "messageId": message["MessageId"],
                    "receiptHandle": message["ReceiptHandle"],
                    "body": message["Body"],
                    "attributes": message["Attributes"],
                    "messageAttributes": {},
                    "md5OfBody": message["MD5OfBody"],
                    "eventSource": "aws:sqs",
                    "eventSourceARN": self.arn,
                    "awsRegion": "eu-central-1"
                })
            })
            .collect();
        json!({ "Records": records })
    }
}
