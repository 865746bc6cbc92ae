//! Inputs that fill the model. Only CRDs today; Rust sources with `+genclient` markers
//! will sit beside them (`input::rust`) and fill the same model.

pub mod crd;
