// What the web client takes from @msgpack/msgpack: the codec, nothing else.
export { encode, decode, DecodeError } from "@msgpack/msgpack";
