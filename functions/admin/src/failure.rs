//! Why a command failed, and the exit status that tells scripts which kind
//! (docs/admin.md, "Exit status"): 0 done, 1 refused, 2 wrong usage (clap's
//! own), 3 the store failed, 4 there is no store.

use std::process::ExitCode;

use nurse_call_core::StoreError;

#[derive(Debug)]
pub(crate) enum Failure {
    /// The command was refused: an unknown id, invalid input, a rule of the
    /// data (a third secret). Nothing was written. Exit status 1.
    Refused(String),
    /// The store failed or could not be reached. Exit status 3.
    Store(String),
    /// There is no store where the options point: no embedded store's file,
    /// or missing DynamoDB tables. Nothing was created. Exit status 4, so
    /// that a timer or script tells a wrong path from a failing store.
    Missing(String),
}

impl Failure {
    pub(crate) fn refused(message: impl Into<String>) -> Self {
        Failure::Refused(message.into())
    }

    pub(crate) fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Refused(_) => ExitCode::from(1),
            Failure::Store(_) => ExitCode::from(3),
            Failure::Missing(_) => ExitCode::from(4),
        }
    }

    /// Names the store in a store failure: `<store>: <what failed>`.
    pub(crate) fn in_store(self, description: &str) -> Self {
        match self {
            Failure::Store(message) => Failure::Store(format!("{description}: {message}")),
            other => other,
        }
    }

    pub(crate) fn message(&self) -> &str {
        match self {
            Failure::Refused(message) | Failure::Store(message) | Failure::Missing(message) => {
                message
            }
        }
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::Store(error.to_string())
    }
}

pub(crate) type Outcome = Result<(), Failure>;
