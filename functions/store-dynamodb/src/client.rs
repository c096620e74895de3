//! Building the SDK client: standard retries with short pauses, timeouts
//! below the Lambda timeout (docs/data-model.md, "Timeouts and retries"), an
//! optional local endpoint, and a counter of requests sent.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_config::meta::region::RegionProviderChain;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::interceptors::BeforeSerializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Credentials, Intercept};
use aws_sdk_dynamodb::error::BoxError;

/// Attempts per DynamoDB request (the first and two retries), in the SDK's
/// standard mode. A transient fault (a reset, one node's 500, a throttled
/// burst) seldom survives two retries; more would only hold the function
/// while the client, told `Retry-After`, retries the whole request itself.
/// docs/data-model.md, "Timeouts and retries", has the reasons of every value.
pub const MAX_ATTEMPTS: u32 = 3;

/// The SDK's pause before a retry, with full jitter: up to this after the
/// first attempt, up to twice this after the second. The SDK's default (1 s,
/// then 2 s) would spend up to 3 s of the function's 10 s waiting.
pub const INITIAL_BACKOFF: Duration = Duration::from_millis(100);

/// How long the SDK waits for DynamoDB: well below the Lambda functions'
/// 10 s timeout, which is well below API Gateway's 29 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A new connection (TCP and TLS), within an attempt.
    pub connect: Duration,
    /// One attempt.
    pub attempt: Duration,
    /// A request with its retries and pauses.
    pub operation: Duration,
}

impl Timeouts {
    /// For DynamoDB in AWS. It answers within milliseconds (a transaction
    /// of 100 items in tens): an attempt 1.5 s old is stuck and is better
    /// tried again on another connection; 4 s holds two stuck attempts, the
    /// pauses and most of a third, and an open's two DynamoDB requests
    /// (snapshot, transaction) still fit in the function's 10 s when both
    /// reach it.
    pub const AWS: Timeouts = Timeouts {
        connect: Duration::from_secs(1),
        attempt: Duration::from_millis(1500),
        operation: Duration::from_secs(4),
    };

    /// For stand-ins far slower than DynamoDB: moto handles one request at a
    /// time and copies whole tables per transaction, so under the concurrency
    /// tests a request may wait seconds for its turn.
    pub const SLOW_STAND_IN: Timeouts = Timeouts {
        connect: Duration::from_secs(1),
        attempt: Duration::from_secs(10),
        operation: Duration::from_secs(30),
    };

    /// [`Timeouts::AWS`], unless `DYNAMODB_ATTEMPT_TIMEOUT_MS` or
    /// `DYNAMODB_OPERATION_TIMEOUT_MS` say otherwise.
    pub fn from_env() -> Self {
        let millis = |name: &str, default: Duration| {
            std::env::var(name)
                .ok()
                .and_then(|ms| ms.trim().parse::<u64>().ok())
                .map_or(default, Duration::from_millis)
        };
        Timeouts {
            connect: Self::AWS.connect,
            attempt: millis("DYNAMODB_ATTEMPT_TIMEOUT_MS", Self::AWS.attempt),
            operation: millis("DYNAMODB_OPERATION_TIMEOUT_MS", Self::AWS.operation),
        }
    }
}

/// Counts DynamoDB operations (not retries) sent through a client: the
/// round-trip budget of each API request is asserted with it.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    /// The operations counted so far; the SDK's retries of one are not more.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// The roots DynamoDB's certificates chain to: Amazon Root CA 1-4 and the
/// Starfield Services root they are cross-signed by (public certificates from
/// the Mozilla CA list).
const AMAZON_ROOTS: &[u8] = include_bytes!("amazon-roots.pem");

/// The HTTPS client. By default the SDK reads every root certificate of the
/// system at start (on Lambda's image, hundreds of files), which made a cold
/// start's init 3× that of an empty Lambda function (docs/performance.md);
/// trusting Amazon's roots alone brings it under 2×. A custom `https://`
/// endpoint (DynamoDB Local behind TLS, a proxy) keeps the system's roots,
/// `SSL_CERT_FILE` included; a plain `http://` one (moto) checks no certificate.
fn https_client(endpoint: Option<&str>) -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
    let custom_https = endpoint.is_some_and(|url| url.starts_with("https://"));
    let trust_store = if custom_https {
        TrustStore::default()
    } else {
        TrustStore::empty().with_pem_certificate(AMAZON_ROOTS)
    };
    let context = TlsContext::builder()
        .with_trust_store(trust_store)
        .build()
        .expect("a trust store always makes a TLS context");
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(context)
        .build_https()
}

/// The shared SDK configuration. With `endpoint` (moto, DynamoDB Local) and no
/// credentials in the environment, fixed local credentials are used so that a
/// newcomer needs no AWS account.
pub async fn sdk_config(endpoint: Option<&str>, timeouts: Timeouts) -> SdkConfig {
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client(endpoint))
        .region(RegionProviderChain::default_provider().or_else("eu-central-1"))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(MAX_ATTEMPTS)
                .with_initial_backoff(INITIAL_BACKOFF),
        )
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(timeouts.connect)
                .operation_attempt_timeout(timeouts.attempt)
                .operation_timeout(timeouts.operation)
                .build(),
        );
    if let Some(endpoint) = endpoint {
        loader = loader.endpoint_url(endpoint);
        if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
            loader = loader
                .credentials_provider(Credentials::new("local", "local", None, None, "local"));
        }
    }
    loader.load().await
}

/// A DynamoDB client from `config` that counts its requests in `counter`.
pub(crate) fn client(config: &SdkConfig, counter: &RequestCounter) -> aws_sdk_dynamodb::Client {
    let dynamodb_config = aws_sdk_dynamodb::config::Builder::from(config)
        .interceptor(counter.clone())
        .build();
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config)
}
