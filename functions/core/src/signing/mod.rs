//! Who sent a request (spec 5, DECISIONS §2): the signed `data_json`
//! ([`compact`]), the signing string of a request ([`credentials`]), the HMAC
//! check ([`signature`]), the optional signed time ([`replay`]), new
//! consumer secrets ([`secrets`]) and the bearer tokens of readers, of which
//! the stores keep only the hash ([`tokens`]).

pub mod compact;
pub mod credentials;
pub mod replay;
pub mod secrets;
pub mod signature;
pub mod tokens;
