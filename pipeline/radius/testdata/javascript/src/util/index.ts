export * from "./format";
