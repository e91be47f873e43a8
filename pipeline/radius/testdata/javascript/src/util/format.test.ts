import { format } from "./format";
