export { format } from "../../../src/util/format";
