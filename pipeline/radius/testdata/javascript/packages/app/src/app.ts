import { format } from "@acme/ui";
export const x = format(2);
