package fakeopenai_test

import (
	"context"
	"fmt"

	"github.com/selfcode/selfcode/app/llm"
	"github.com/selfcode/selfcode/internal/fakeopenai"
	"github.com/selfcode/selfcode/pipeline/chat"
)

// A fake that answers the planner with a plan and the editor with a tool
// call, driven through the real client.
func ExampleNew() {
	srv, err := fakeopenai.New(fakeopenai.Options{
		Roles: map[string]string{"p-model": "planner", "e-model": "editor"},
		Script: []fakeopenai.Step{
			{Role: "editor", ToolCalls: []fakeopenai.ToolCall{{Name: "finish", Arguments: `{"summary":"done"}`}}},
			{Role: "planner", Content: `{"summary":"s","steps":[],"risks":[],"questions":[]}`},
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	c, err := llm.New(llm.Options{
		BaseURL: srv.URL(),
		Models:  map[chat.Role]string{chat.RolePlanner: "p-model", chat.RoleEditor: "e-model"},
	})
	if err != nil {
		panic(err)
	}
	ask := func(role chat.Role) chat.Response {
		resp, err := c.Chat(context.Background(), chat.Request{Role: role, Messages: []chat.Message{{Role: chat.User, Content: "go"}}})
		if err != nil {
			panic(err)
		}
		return resp
	}
	plan := ask(chat.RolePlanner)
	edit := ask(chat.RoleEditor)
	fmt.Println(plan.Message.Content)
	fmt.Println(edit.Message.ToolCalls[0].Name, edit.Message.ToolCalls[0].Arguments, edit.FinishReason)
	fmt.Println(len(srv.RequestsFor("p-model")), len(srv.RequestsFor("e-model")), srv.Remaining())
	// Output:
	// {"summary":"s","steps":[],"risks":[],"questions":[]}
	// finish {"summary":"done"} tool_calls
	// 1 1 0
}
