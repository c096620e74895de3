//! The AWS side of the alarm tests on moto: what every test starts from
//! (the local server on moto stepping no alarm itself, the data table's
//! stream, the installation's key), the stack's queues (with a shorter
//! visibility and fewer receives than the stack's, so that a poison message
//! lands in its dead-letter queue in seconds), the functions' environment,
//! and the event source mappings of the `alarm`, `deliver` and `forward`
//! functions: the data table's stream and the timer queue to `alarm`, the
//! delivery queue to `deliver`, the webhook queue to `forward`, polled in
//! turns, messages deleted unless reported failed, as Lambda does.

use std::collections::HashSet;
use std::future::Future;
use std::time::{Duration, Instant};

use blackbox_tests::*;

use crate::alarms_aws::queues::Queue;
use crate::live_aws::moto_api::{Moto, StreamReader};
use crate::live_aws::runtime_api::Function;

/// What every test of the suite starts from: the local server writing to
/// moto and stepping no alarm itself (`ALARM_STEPS=none`: no timers, no
/// look after a write, as a Lambda function frozen after its answer), the
/// data table's stream on, and the installation's key. The queues and the
/// functions borrow it, so a test makes them from it: [`MotoStack::queues`],
/// [`MotoStack::env`], [`MotoStack::event_sources`].
pub(crate) struct MotoStack {
    pub server: Server,
    pub moto: Moto,
    /// The tables' prefix of this server.
    pub prefix: String,
    /// The data table, its stream on.
    pub data: String,
    /// The installation's KMS key (its ARN).
    pub key: String,
    region: String,
    /// Settings the server and the functions share (a shortened deadline).
    shared_env: Vec<(String, String)>,
}

impl MotoStack {
    /// The stack around a server started with `options` and `shared_env`,
    /// which the functions get too; `None` on SQLite, where there is
    /// neither stream nor queue (it says the test is skipped).
    pub(crate) async fn start(
        mut options: Options,
        shared_env: &[(&str, &str)],
    ) -> Option<MotoStack> {
        if !on_dynamodb() {
            eprintln!(
                "alarms_aws: skipped on SQLite: it reads the data table's DynamoDB stream and \
                 SQS on moto (scripts/test runs the suite again with BLACKBOX_STORE=dynamodb)"
            );
            return None;
        }
        let region = region();
        for (name, value) in shared_env {
            options = options.env(name, value);
        }
        let server = Server::start(options.env("ALARM_STEPS", "none"));
        let prefix = server.table_prefix();
        let data = format!("{prefix}data");
        let moto = Moto::new(&store_conformance::moto::endpoint(), &region);
        moto.enable_stream(&data).await;
        let key = installation_key(&moto).await;
        Some(MotoStack {
            server,
            moto,
            prefix,
            data,
            key,
            region,
            shared_env: shared_env
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        })
    }

    /// The stack with §18's receipt deadline (`RECEIPT_SECONDS`) shortened
    /// to `seconds`, for the server and the functions.
    pub(crate) async fn with_receipt_seconds(seconds: u64) -> Option<MotoStack> {
        let seconds = seconds.to_string();
        MotoStack::start(Options::sandbox(), &[("RECEIPT_SECONDS", &seconds)]).await
    }

    /// The stack's queues, made on moto.
    pub(crate) async fn queues(&self) -> Queues<'_> {
        Queues::create(&self.moto, &self.prefix).await
    }

    /// The functions' environment with `queues`.
    pub(crate) fn env(&self, queues: &Queues<'_>) -> Vec<(String, String)> {
        let mut env = function_env(&self.prefix, &self.region, queues, &self.key);
        env.extend(self.shared_env.iter().cloned());
        env
    }

    /// The `alarm`, `deliver` and `forward` functions started with `env`,
    /// the stream read from now on.
    pub(crate) async fn event_sources<'a>(
        &'a self,
        queues: &'a Queues<'a>,
        env: &[(String, String)],
    ) -> EventSources<'a> {
        EventSources::start(&self.moto, &self.data, queues, env).await
    }
}

/// The stack's queues on moto.
pub(crate) struct Queues<'a> {
    pub timers: Queue<'a>,
    pub dead_letters: Queue<'a>,
    pub deliveries: Queue<'a>,
    /// FIFO, one message group: the webhook dispatcher's wake-ups.
    pub webhooks: Queue<'a>,
}

impl<'a> Queues<'a> {
    pub(crate) async fn create(moto: &'a Moto, prefix: &str) -> Queues<'a> {
        let dead_letters =
            Queue::create(moto, &format!("{prefix}alarm-timers-dlq"), json!({})).await;
        let redrive = json!({"deadLetterTargetArn": dead_letters.arn, "maxReceiveCount": 2});
        let timers = Queue::create(
            moto,
            &format!("{prefix}alarm-timers"),
            json!({"VisibilityTimeout": "1", "RedrivePolicy": redrive.to_string()}),
        )
        .await;
        let deliveries = Queue::create(moto, &format!("{prefix}deliveries"), json!({})).await;
        let webhooks = Queue::create(
            moto,
            &format!("{prefix}webhooks.fifo"),
            json!({"FifoQueue": "true"}),
        )
        .await;
        Queues {
            timers,
            dead_letters,
            deliveries,
            webhooks,
        }
    }
}

fn region() -> String {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
        .unwrap_or_else(|| "eu-central-1".to_string())
}

/// The stack's environment of the alarm and deliver functions, on moto.
fn function_env(
    prefix: &str,
    region: &str,
    queues: &Queues<'_>,
    secrets_key: &str,
) -> Vec<(String, String)> {
    let moto = store_conformance::moto::endpoint();
    [
        ("SERVICE_MODE", "sandbox".to_string()),
        ("SERVICE_TIME_ZONE", "Europe/Berlin".to_string()),
        ("CALL_TYPES_TABLE", format!("{prefix}call-types")),
        ("CONSUMERS_TABLE", format!("{prefix}consumers")),
        ("DATA_TABLE", format!("{prefix}data")),
        ("ALARM_TIMER_QUEUE_URL", queues.timers.url.clone()),
        ("DELIVERY_QUEUE_URL", queues.deliveries.url.clone()),
        ("WEBHOOK_QUEUE_URL", queues.webhooks.url.clone()),
        ("DYNAMODB_ENDPOINT", moto.clone()),
        ("SQS_ENDPOINT", moto.clone()),
        // The installation's key: `deliver` seals the VAPID private key it
        // makes, `forward` opens the webhook secrets.
        ("SECRETS_KEY_ID", secrets_key.to_string()),
        ("KMS_ENDPOINT", moto),
        // moto answers one request at a time: slower than DynamoDB.
        ("DYNAMODB_ATTEMPT_TIMEOUT_MS", "10000".to_string()),
        ("DYNAMODB_OPERATION_TIMEOUT_MS", "30000".to_string()),
        ("AWS_REGION", region.to_string()),
        ("AWS_DEFAULT_REGION", region.to_string()),
        ("RUST_LOG", "info".to_string()),
        // The tests' push service on `localhost` (DECISIONS §20).
        (
            "PUSH_SERVICES",
            blackbox_tests::TEST_PUSH_SERVICES.to_string(),
        ),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect()
}

/// A new KMS key on moto, as the production stack's installation key
/// (its ARN).
async fn installation_key(moto: &Moto) -> String {
    let created = moto
        .call_service(
            "kms",
            "TrentService.CreateKey",
            serde_json::json!({"Description": "nurse-call test installation"}),
        )
        .await;
    created["KeyMetadata"]["Arn"]
        .as_str()
        .expect("the key's ARN")
        .to_string()
}

/// The event source mappings of the two functions: the stream and the
/// timer queue to the alarm function, the delivery queue to the deliver
/// function, polled in turns.
pub(crate) struct EventSources<'a> {
    stream: StreamReader<'a>,
    queues: &'a Queues<'a>,
    pub alarm: Function,
    pub deliver: Function,
    pub forward: Function,
    /// Every timer message handed over, in order.
    pub taken: Vec<Value>,
    /// Bodies of the messages the function reported failed.
    pub failed: Vec<String>,
    /// Stream records handed over.
    pub records: usize,
    /// Push jobs handed over.
    pub push_jobs: usize,
    /// Webhook wake-ups handed over.
    pub webhook_wakes: usize,
    /// While set, the timer queue's messages are deleted unseen, as if
    /// lost (DECISIONS §19: the minute's wake-up must find their alarms).
    pub lose_timers: bool,
    /// The timer messages lost so.
    pub lost: Vec<Value>,
}

impl<'a> EventSources<'a> {
    /// The three functions started with `env`, the stream read from now on.
    async fn start(
        moto: &'a Moto,
        data_table: &str,
        queues: &'a Queues<'a>,
        env: &[(String, String)],
    ) -> EventSources<'a> {
        let alarm = Function::start("alarm", &workspace_binary("alarm"), env).await;
        let deliver = Function::start("deliver", &workspace_binary("deliver"), env).await;
        let forward = Function::start("forward", &workspace_binary("forward"), env).await;
        EventSources {
            stream: StreamReader::latest(moto, data_table).await,
            queues,
            alarm,
            deliver,
            forward,
            taken: Vec::new(),
            failed: Vec::new(),
            records: 0,
            push_jobs: 0,
            webhook_wakes: 0,
            lose_timers: false,
            lost: Vec::new(),
        }
    }

    /// One poll of each source; what it found goes to the function.
    pub(crate) async fn round(&mut self) {
        let event = self.stream.next_event().await;
        let records = event["Records"].as_array().map_or(0, Vec::len);
        if records > 0 {
            self.records += records;
            let answer = self.alarm.invoke(event).await;
            assert_eq!(
                answer,
                json!({"batchItemFailures": []}),
                "the stream's records are all scheduled"
            );
        }
        self.push_jobs += hand_over(
            &self.queues.deliveries,
            &mut self.deliver,
            "every push job sent",
        )
        .await;
        self.webhook_wakes += hand_over(
            &self.queues.webhooks,
            &mut self.forward,
            "the webhook rounds ran",
        )
        .await;
        let messages = self.queues.timers.receive().await;
        if messages.is_empty() {
            return;
        }
        if self.lose_timers {
            for message in messages {
                let body = message["Body"].as_str().unwrap_or_default();
                self.lost
                    .push(serde_json::from_str(body).unwrap_or(Value::String(body.into())));
                self.queues
                    .timers
                    .delete(message["ReceiptHandle"].as_str().expect("a receipt"))
                    .await;
            }
            return;
        }
        let answer = self
            .alarm
            .invoke(self.queues.timers.lambda_event(&messages))
            .await;
        let failed: HashSet<String> = answer["batchItemFailures"]
            .as_array()
            .expect("a partial batch response")
            .iter()
            .map(|failure| failure["itemIdentifier"].as_str().unwrap().to_string())
            .collect();
        for message in messages {
            let body = message["Body"].as_str().unwrap_or_default().to_string();
            if failed.contains(message["MessageId"].as_str().unwrap_or_default()) {
                self.failed.push(body.clone());
            } else {
                self.queues
                    .timers
                    .delete(message["ReceiptHandle"].as_str().expect("a receipt"))
                    .await;
            }
            self.taken
                .push(serde_json::from_str(&body).unwrap_or(Value::String(body)));
        }
    }

    /// Polls until `check` holds; panics after `within`.
    pub(crate) async fn until<F, Fut>(&mut self, what: &str, within: Duration, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        let deadline = Instant::now() + within;
        loop {
            self.round().await;
            if check().await {
                return;
            }
            assert!(Instant::now() < deadline, "{what}: not within {within:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls until `count` timer messages were handed over in all.
    pub(crate) async fn until_taken(&mut self, count: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.taken.len() < count {
            assert!(
                Instant::now() < deadline,
                "{count} timers not taken within {within:?}"
            );
            self.round().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls for `duration`.
    pub(crate) async fn run_for(&mut self, duration: Duration) {
        let end = Instant::now() + duration;
        while Instant::now() < end {
            self.round().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// What `queue` has now to `function`, as Lambda's mapping hands it over,
/// asserting that nothing is reported failed (so each message is deleted);
/// how many messages there were.
async fn hand_over(queue: &Queue<'_>, function: &mut Function, what: &str) -> usize {
    let messages = queue.receive().await;
    if messages.is_empty() {
        return 0;
    }
    let answer = function.invoke(queue.lambda_event(&messages)).await;
    assert_eq!(answer, json!({"batchItemFailures": []}), "{what}");
    for message in &messages {
        queue
            .delete(message["ReceiptHandle"].as_str().expect("a receipt"))
            .await;
    }
    messages.len()
}
