//! Who sent a request (spec 5, DECISIONS §2): the signed `data_json`
//! ([`compact`]), the signing string of a request ([`credentials`]), the HMAC
//! check ([`signature`]), the optional signed time ([`replay`]), new
//! consumer secrets ([`secrets`]), the bearer tokens of readers, of which
//! the stores keep only the hash ([`tokens`]), and the secrets the service
//! signs with, kept sealed with the installation's key ([`sealing`]).

pub(crate) mod compact;
pub(crate) mod credentials;
pub(crate) mod replay;
pub mod sealing;
pub mod secrets;
pub mod signature;
pub mod tokens;
