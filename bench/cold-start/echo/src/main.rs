//! The baseline of `bench/cold-start`: a Lambda function that does nothing but
//! return its event, so its init and invocation times are those of the Rust
//! runtime (`lambda_runtime`, tokio, one HTTP client to the Runtime API).

use lambda_runtime::{Error, LambdaEvent, service_fn};
use serde_json::Value;

async fn echo(event: LambdaEvent<Value>) -> Result<Value, Error> {
    Ok(event.payload)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::run(service_fn(echo)).await
}
