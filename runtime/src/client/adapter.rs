//! What the deserializer adapters (`super::skip`, `super::exact`) share: the methods
//! they pass through unchanged to the deserializer or visitor they wrap.
//!
//! Contract: [`forward_deserializer!`] writes, inside an `impl Deserializer<'de>`, the
//! listed single-visitor methods plus (unless it starts with `@only`)
//! `deserialize_unit_struct`, `deserialize_tuple`, `deserialize_tuple_struct`,
//! `deserialize_enum` and `is_human_readable`, each calling the same method of
//! `self.<field>` with the same arguments. [`forward_visitor!`] writes, inside an
//! `impl Visitor<'de>`, every visit method for scalars, strings, bytes, `none`, `unit`
//! and (unless it starts with `@only`) enums, each calling `self.<field>`'s. An adapter
//! writes by hand only the methods whose behaviour it changes.

/// See the module documentation.
macro_rules! forward_deserializer {
    (@only $field:tt; $($method:ident)*) => {
        $(
            fn $method<V: serde::de::Visitor<'de>>(
                self,
                visitor: V,
            ) -> Result<V::Value, Self::Error> {
                self.$field.$method(visitor)
            }
        )*
    };
    ($field:tt; $($method:ident)*) => {
        forward_deserializer!(@only $field; $($method)*);

        fn deserialize_unit_struct<V: serde::de::Visitor<'de>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_unit_struct(name, visitor)
        }

        fn deserialize_tuple<V: serde::de::Visitor<'de>>(
            self,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_tuple(len, visitor)
        }

        fn deserialize_tuple_struct<V: serde::de::Visitor<'de>>(
            self,
            name: &'static str,
            len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_tuple_struct(name, len, visitor)
        }

        fn deserialize_enum<V: serde::de::Visitor<'de>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.$field.deserialize_enum(name, variants, visitor)
        }

        fn is_human_readable(&self) -> bool {
            self.$field.is_human_readable()
        }
    };
}

/// See the module documentation.
macro_rules! forward_visitor {
    ($field:tt) => {
        forward_visitor!(@only $field);

        fn visit_enum<A: serde::de::EnumAccess<'de>>(
            self,
            data: A,
        ) -> Result<Self::Value, A::Error> {
            self.$field.visit_enum(data)
        }
    };
    (@only $field:tt) => {
        forward_visitor!(@values $field;
            visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
            visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
            visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char visit_str: &str
            visit_string: String visit_bytes: &[u8] visit_byte_buf: Vec<u8>
        );

        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            self.$field.visit_none()
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            self.$field.visit_unit()
        }

        fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
            self.$field.visit_borrowed_str(v)
        }

        fn visit_borrowed_bytes<E: serde::de::Error>(
            self,
            v: &'de [u8],
        ) -> Result<Self::Value, E> {
            self.$field.visit_borrowed_bytes(v)
        }
    };
    (@values $field:tt; $($method:ident: $ty:ty)*) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.$field.$method(v)
            }
        )*
    };
}

pub(crate) use {forward_deserializer, forward_visitor};
