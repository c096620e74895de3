//! Who sent a request (spec 5, DECISIONS §2): the signed `data_json`
//! ([`compact`]), the signing string of a request ([`credentials`]), the HMAC
//! check ([`signature`]), the optional signed time ([`replay`]) and new
//! consumer secrets ([`secrets`]).

pub mod compact;
pub mod credentials;
pub mod replay;
pub mod secrets;
pub mod signature;
