//! Why a command failed, and the exit status that tells scripts which kind.

use std::process::ExitCode;

use nurse_call_core::StoreError;

#[derive(Debug)]
pub enum Failure {
    /// The command was refused: an unknown id, invalid input, a rule of the
    /// data (a third secret). Nothing was written. Exit status 1.
    Refused(String),
    /// The store failed or could not be reached. Exit status 3.
    Store(String),
}

impl Failure {
    pub fn refused(message: impl Into<String>) -> Self {
        Failure::Refused(message.into())
    }

    /// Clap's usage errors exit with 2; these take 1 and 3.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Refused(_) => ExitCode::from(1),
            Failure::Store(_) => ExitCode::from(3),
        }
    }

    /// Names the store in a store failure: `<store>: <what failed>`.
    pub fn in_store(self, description: &str) -> Self {
        match self {
            Failure::Store(message) => Failure::Store(format!("{description}: {message}")),
            refused => refused,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::Refused(message) | Failure::Store(message) => message,
        }
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::Store(error.to_string())
    }
}

pub type Outcome = Result<(), Failure>;
