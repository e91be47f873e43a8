test("fine", () => { expect(1).toBe(1); });
