//! `zz_generated_deepcopy.rs`: Go's DeepCopy/DeepCopyInto as Rust's `Clone`.
//!
//! `clone()` is DeepCopy. `clone_from()` is DeepCopyInto: it clones field by field with
//! each field's own `clone_from`, so the target's allocations are reused wherever the
//! standard library reuses them: `String` and `Vec` keep their buffers (a `Vec` clones
//! into its existing elements), `Option`, the runtime's `Nullable` and `Box` clone into
//! the value they already hold, and generated structs and enums recurse (an enum's
//! catch-all keeps its `String`), as does the runtime's `Condition`. Copy fields are
//! assigned.
//!
//! User-written enums (Rust input) get a `clone()` that clones each variant's fields, and
//! the standard `clone_from`.
//!
//! What does not reuse allocations: `BTreeMap` (the standard library's `clone_from` for
//! it rebuilds the map), `serde_json::Value`, and k8s-openapi types (`ObjectMeta`,
//! `IntOrString`), whose `Clone` is derived upstream; for them `clone_from` is
//! `*self = source.clone()`. The result is always equal to `source.clone()`.

use proc_macro2::TokenStream;
use quote::quote;

use super::{ident, is_copy, path_tokens, Module};
use crate::model::{EnumDef, ExistingEnumDef, StructDef, TypeDef, VariantFields, Version};

/// The `zz_generated_deepcopy` module of a version.
pub fn deepcopy_module(version: &Version) -> Module {
    let docs = vec![
        "`Clone` for this version's types: `clone()` is Go's DeepCopy, `clone_from()` is"
            .to_owned(),
        "DeepCopyInto and reuses the target's allocations field by field.".to_owned(),
    ];
    let impls = version.types.iter().map(|t| match t {
        TypeDef::Struct(s) => struct_clone(s),
        TypeDef::Enum(e) => enum_clone(e),
        TypeDef::ExistingEnum(e) => existing_enum_clone(e),
    });
    Module::new("zz_generated_deepcopy", docs, quote!(#(#impls)*))
}

/// `Clone` for a struct (kubegen's, or a user-written one at its path).
pub fn struct_clone(s: &StructDef) -> TokenStream {
    let name = match &s.existing {
        Some(path) => path_tokens(path),
        None => {
            let name = ident(&s.name);
            quote!(super::types::#name)
        }
    };
    let mut names: Vec<(syn::Ident, bool)> = s
        .fields
        .iter()
        .map(|f| (ident(&f.rust_name), is_copy(&f.ty) && !f.optional))
        .collect();
    if let Some(unknown) = &s.unknown_fields {
        names.push((ident(unknown), false));
    }
    let clones = names.iter().map(|(n, copy)| {
        if *copy {
            quote!(#n: self.#n,)
        } else {
            quote!(#n: ::std::clone::Clone::clone(&self.#n),)
        }
    });
    let clone_froms = names.iter().map(|(n, copy)| {
        if *copy {
            quote!(self.#n = source.#n;)
        } else {
            quote!(::std::clone::Clone::clone_from(&mut self.#n, &source.#n);)
        }
    });
    let source = if names.is_empty() {
        quote!(_source)
    } else {
        quote!(source)
    };
    quote! {
        impl ::std::clone::Clone for #name {
            fn clone(&self) -> Self {
                Self { #(#clones)* }
            }

            fn clone_from(&mut self, #source: &Self) {
                #(#clone_froms)*
            }
        }
    }
}

/// `Clone` for a string enum: the catch-all reuses its `String`.
pub fn enum_clone(e: &EnumDef) -> TokenStream {
    let name = ident(&e.name);
    let other = ident(&e.other_variant);
    let arms = e.variants.iter().map(|v| {
        let n = ident(&v.name);
        quote!(Self::#n => Self::#n,)
    });
    quote! {
        impl ::std::clone::Clone for super::types::#name {
            fn clone(&self) -> Self {
                match self {
                    #(#arms)*
                    Self::#other(value) => Self::#other(::std::clone::Clone::clone(value)),
                }
            }

            fn clone_from(&mut self, source: &Self) {
                if let (Self::#other(target), Self::#other(value)) = (&mut *self, source) {
                    ::std::clone::Clone::clone_from(target, value);
                } else {
                    *self = ::std::clone::Clone::clone(source);
                }
            }
        }
    }
}

/// `Clone` for a user-written enum (Rust input): each variant clones what it holds.
/// `clone_from` is the standard `*self = source.clone()`: a variant may change.
pub fn existing_enum_clone(e: &ExistingEnumDef) -> TokenStream {
    let name = path_tokens(&e.path);
    let arms = e.variants.iter().map(|v| {
        let n = ident(&v.name);
        match &v.fields {
            VariantFields::Unit => quote!(Self::#n => Self::#n,),
            VariantFields::Tuple(count) => {
                let binds: Vec<syn::Ident> =
                    (0..*count).map(|i| quote::format_ident!("f{}", i)).collect();
                quote! {
                    Self::#n(#(#binds),*) => Self::#n(#(::std::clone::Clone::clone(#binds)),*),
                }
            }
            VariantFields::Named(fields) => {
                let fields: Vec<syn::Ident> = fields.iter().map(|f| ident(f)).collect();
                quote! {
                    Self::#n { #(#fields),* } => Self::#n { #(#fields: ::std::clone::Clone::clone(#fields)),* },
                }
            }
        }
    });
    // An enum without variants has no value to clone; `*self` says so to the checker.
    let scrutinee = if e.variants.is_empty() {
        quote!(*self)
    } else {
        quote!(self)
    };
    quote! {
        impl ::std::clone::Clone for #name {
            fn clone(&self) -> Self {
                match #scrutinee {
                    #(#arms)*
                }
            }
        }
    }
}
